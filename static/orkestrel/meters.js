// @ts-check
// The header's meters: the conversation's token usage and cost, and the context window in
// use. `state` and `usage` frames set them; a `finish` adds the answer's own cost.

const USAGE_KEYS = ["total", "prompt", "completion", "cache_read", "cache_write", "reasoning"];

/** "$0.0012", "$1.50": a USD decimal string as money ("" for none: the model has no price). */
function dollars(cost) {
  if (cost === null || cost === undefined) return "";
  const value = Number(cost);
  const digits = value >= 1 || value === 0 ? { maximumFractionDigits: 2 } : { maximumSignificantDigits: 2 };
  return value.toLocaleString("en-US", { style: "currency", currency: "USD", ...digits });
}

export class Meters {
  /**
   * @param {HTMLElement} usageBox the `[data-testid=usage]` paragraph
   * @param {HTMLElement} contextBox the `[data-testid=context-meter]` block
   */
  constructor(usageBox, contextBox) {
    this.usageBox = usageBox;
    this.contextBox = contextBox;
  }

  /** The span `.usage-<name>` (made at the end when the page has none). */
  slot(name) {
    let node = this.usageBox.querySelector(`.usage-${name}`);
    if (!node) {
      node = document.createElement("span");
      node.className = `usage-${name}`;
      this.usageBox.append(" ", node);
    }
    return node;
  }

  /** `usage` is the conversation's; `answer`, when given, one run's (its cost shown apart). */
  usage(usage, answer = undefined) {
    const box = this.usageBox;
    if (answer) this.slot("answer").textContent = answer.cost == null ? "" : `this answer ${dollars(answer.cost)}`;
    if (!usage) return;
    for (const key of USAGE_KEYS) {
      const value = Number(usage[key]) || 0;
      box.dataset[key] = String(value);
      const node = box.querySelector(`.usage-${key}`);
      if (node) node.textContent = String(value);
    }
    // Cached input and reasoning are parts of prompt and completion: told on hover.
    const { cache_read: read, cache_write: write, reasoning } = box.dataset;
    box.title = `cache read ${read}, cache write ${write}, reasoning ${reasoning}`;
    box.dataset.cost = usage.cost ?? "";
    this.slot("cost").textContent = usage.cost == null ? "" : `· ${dollars(usage.cost)}`;
  }

  /** One call's usage without the running total: added; the next `state` is exact. */
  add(usage) {
    const sum = {};
    for (const key of ["total", "prompt", "completion"]) {
      sum[key] = (Number(this.usageBox.dataset[key]) || 0) + (Number(usage[key]) || 0);
    }
    this.usage(sum);
  }

  context(context) {
    if (!context) return;
    const box = this.contextBox;
    const used = Number(context.used) || 0;
    const windowSize = context.window === null || context.window === undefined ? null : Number(context.window);
    box.dataset.used = String(used);
    box.dataset.window = windowSize === null ? "" : String(windowSize);
    box.dataset.approximate = context.approximate ? "true" : "false";
    box.hidden = !windowSize;
    if (!windowSize) return;
    const meter = /** @type {HTMLMeterElement} */ (box.querySelector("meter"));
    meter.max = windowSize;
    meter.low = Math.round(windowSize * 0.75);
    meter.high = Math.round(windowSize * 0.9);
    meter.optimum = 0;
    meter.value = Math.min(used, windowSize);
    // An estimate reads as one: the provider has not counted this history.
    box.querySelector(".context-used").textContent = `${context.approximate ? "≈" : ""}${used}`;
    box.querySelector(".context-window").textContent = String(windowSize);
  }
}
