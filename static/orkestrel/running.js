// @ts-check
// A running tool call's card: how long it has run (ticking once a second until its result)
// and, for a command tool, the last lines of its output (a `tool_progress` display of kind
// "command"). A tab that joins mid-call starts the clock from the `state` frame's
// `run.running[].elapsed`; a command's report carries its own `elapsed`, which corrects it.

import { el } from "./dom.js";

/** Seconds as the card says them: "4 s", "2 min 05 s". */
export function elapsedText(seconds) {
  const whole = Math.max(0, Math.floor(seconds));
  if (whole < 60) return `${whole} s`;
  const minutes = Math.floor(whole / 60);
  return `${minutes} min ${String(whole % 60).padStart(2, "0")} s`;
}

/** A command's output tail (`{kind: "command", lines, elapsed}`), or null for any other display. */
export function renderCommandOutput(display) {
  if (!display || display.kind !== "command" || !Array.isArray(display.lines)) return null;
  const text = display.lines.map(String).join("\n");
  return el(
    "div",
    { className: "tool-command", "data-testid": "tool-command" },
    el("span", { className: "tool-part-label", text: "Output so far" }),
    el("pre", { className: "tool-command-tail", "data-testid": "tool-output-tail", text: text || "(nothing yet)" }),
  );
}

/** The running cards of one live run and the clock on each (see the module). */
export class ElapsedClock {
  constructor() {
    /** @type {Map<HTMLElement, number>} card → when its call started (ms, this page's clock) */
    this.started = new Map();
    /** @type {number | null} */
    this.timer = null;
  }

  /** The call of `card` runs, started `seconds` ago (0: now); its clock shows at once. */
  start(card, seconds = 0) {
    const elapsed = typeof seconds === "number" && Number.isFinite(seconds) ? seconds : 0;
    this.started.set(card, Date.now() - elapsed * 1000);
    this.show(card);
    if (this.timer === null) this.timer = window.setInterval(() => this.tick(), 1000);
  }

  /** The card was drawn again (a report): put its clock back. */
  show(card) {
    const since = this.started.get(card);
    if (since === undefined) return;
    const head = card.querySelector(":scope > .tool-head");
    if (!head) return;
    let clock = head.querySelector(":scope > .tool-elapsed");
    if (!clock) {
      clock = el("span", { className: "tool-elapsed", "data-testid": "tool-elapsed" });
      head.append(clock);
    }
    const text = elapsedText((Date.now() - since) / 1000);
    if (clock.textContent !== text) clock.textContent = text;
  }

  /** The call of `card` ended: its clock stops (the result replaces the card's content). */
  stop(card) {
    this.started.delete(card);
    if (this.started.size === 0) this.stopAll();
  }

  stopAll() {
    this.started.clear();
    if (this.timer !== null) window.clearInterval(this.timer);
    this.timer = null;
  }

  tick() {
    for (const card of this.started.keys()) {
      if (card.isConnected) this.show(card);
      else this.started.delete(card);
    }
    if (this.started.size === 0) this.stopAll();
  }
}
