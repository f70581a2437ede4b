// @ts-check
// A tool call's card in the transcript: its name and state, who decided it if it was held,
// what the tool showed while it ran (a delegated child's progress, a command's output, images,
// an edit's diff), and its arguments and result. Built the same from the page load, a `state`
// frame and the live frames.

import { el, prettyJson } from "./dom.js";
import { renderCommandOutput } from "./running.js";
import { isImages, renderToolImages } from "./tool_images.js";

/** People's decisions on held calls, by call id (the state's `decisions` and the approval
 * frames' `decided`): a card drawn later still says who decided. */
export const DECISIONS = new Map();

/** "Approved by alice at 14:03:12 with {…}": who decided a held call, when, with what. */
export function renderDecision(decision) {
  const at = decision.decided ? new Date(decision.decided) : null;
  const when = at && !Number.isNaN(at.getTime()) ? ` at ${at.toLocaleString()}` : "";
  let text;
  if (decision.status === "approved") text = `Approved by ${decision.decided_by || "an operator"}${when}`;
  else if (decision.status === "expired" || !decision.decided_by) text = `Denied automatically${when}: nobody decided in time`;
  else text = `Denied by ${decision.decided_by}${when}`;
  const node = el("p", { className: `tool-decision decision-${decision.status}`, "data-testid": "tool-decision", text });
  if (decision.status === "approved") {
    node.append(" with ", el("code", { className: "tool-decision-args", text: JSON.stringify(decision.arguments ?? {}) }));
  }
  if (at) node.title = at.toISOString();
  return node;
}

/** A decision arrived: remember it and show it on its card if the card is on the page. */
export function showDecision(root, decision) {
  if (!decision || !decision.call_id) return;
  DECISIONS.set(decision.call_id, decision);
  const card = root.querySelector(`.tool-card[data-call-id="${CSS.escape(decision.call_id)}"]`);
  if (!card) return;
  const node = renderDecision(decision);
  const old = card.querySelector(":scope > .tool-decision");
  if (old) old.replaceWith(node);
  else card.querySelector(":scope > .tool-head")?.after(node);
}

/**
 * A tool card. `tool` is {id, name, arguments, result, error, denied, reason, rule, phase}; a
 * missing `result` and `error` shows the card as still waiting (`phase`: "writing" while the
 * model streams the call, "running" once it executes).
 */
export function renderToolCard(tool) {
  const card = el("div", {
    className: "tool-card",
    "data-testid": "tool-card",
    "data-call-id": tool.id || "",
    "data-tool-name": tool.name || "",
  });
  fillToolCard(card, tool);
  return card;
}

/** (Re)build a tool card's content; used again when its result arrives later. */
export function fillToolCard(card, tool) {
  card.replaceChildren();
  card.classList.toggle("is-denied", Boolean(tool.denied));
  const hasResult = tool.result !== undefined && tool.result !== null;
  const hasError = tool.error !== undefined && tool.error !== null;
  const head = el(
    "div",
    { className: "tool-head" },
    el("span", { className: "tool-label", text: "Tool" }),
    el("code", { className: "tool-name", text: tool.name || "" }),
  );
  if (tool.denied) {
    head.append(el("span", { className: "badge badge-denied", "data-testid": "tool-denied", text: "denied" }));
  } else if (!hasResult && !hasError && tool.phase === "writing") {
    head.append(el("span", { className: "badge badge-running", "data-testid": "tool-writing", text: "writing…" }));
  } else if (!hasResult && !hasError && tool.phase === "running") {
    head.append(el("span", { className: "badge badge-running", "data-testid": "tool-running", text: "running…" }));
  } else if (!hasResult && !hasError) {
    head.append(el("span", { className: "badge badge-pending", text: "no result" }));
  } else if (hasError) {
    head.append(el("span", { className: "badge badge-error", "data-testid": "tool-failed", text: "error" }));
  }
  card.append(head);
  const decision = DECISIONS.get(tool.id);
  if (decision) card.append(renderDecision(decision));
  const shown = renderDisplay(tool.display);
  if (shown) card.append(shown);
  if (tool.denied) {
    const reason = el("p", { className: "tool-reason", text: tool.reason || "Denied by the authority policy." });
    if (tool.rule) reason.append(" ", el("span", { className: "tool-rule", text: `(rule: ${tool.rule})` }));
    card.append(reason);
  }
  const details = el(
    "details",
    { className: "tool-details", open: tool.phase === "writing" },
    el("summary", { text: "Arguments and result" }),
    el(
      "div",
      { className: "tool-part" },
      el("span", { className: "tool-part-label", text: "Arguments" }),
      // While the model writes it, the arguments are raw text, shown as they arrive.
      el("pre", { className: "tool-args", text: tool.phase === "writing" ? tool.arguments : prettyJson(tool.arguments ?? {}) }),
    ),
  );
  if (hasResult || hasError) {
    const isError = hasError || Boolean(tool.denied);
    details.append(
      el(
        "div",
        { className: "tool-part" },
        el("span", { className: "tool-part-label", text: isError ? "Error" : "Result" }),
        el("pre", {
          className: isError ? "tool-result is-error" : "tool-result",
          text: prettyJson(hasError ? tool.error : tool.result),
        }),
      ),
    );
  }
  card.append(details);
}

function isDelegate(display) {
  return Boolean(display) && display.kind === "delegate" && typeof display.job === "string";
}

function plural(count, one, many) {
  return `${count} ${count === 1 ? one : many}`;
}

/** "3 steps, 1 tool call, 1.2k tokens": a delegated child's `progress`, or "" before any. */
export function progressText(progress) {
  if (!progress || typeof progress !== "object") return "";
  const count = (name) => (Number.isInteger(progress[name]) && progress[name] > 0 ? progress[name] : 0);
  const parts = [];
  if (count("turns")) parts.push(plural(count("turns"), "step", "steps"));
  if (count("tools")) parts.push(plural(count("tools"), "tool call", "tool calls"));
  const tokens = count("tokens");
  if (tokens) parts.push(tokens < 1000 ? plural(tokens, "token", "tokens") : `${(tokens / 1000).toFixed(1)}k tokens`);
  return parts.join(", ");
}

/**
 * What a tool showed on its card (never sent to the model), or null: a delegated child (its
 * profile, status, attempt, progress and a link to its transcript, live while it runs and as
 * it ended), else the display as text (an edit's diff).
 */
function renderDisplay(display) {
  if (isDelegate(display)) {
    const { job, profile, status, attempt, progress } = display;
    let state = status || "running";
    if (status === "running" && Number.isInteger(attempt) && attempt > 1) state += ` (attempt ${attempt})`;
    const counted = progressText(progress);
    const block = el(
      "div",
      { className: "tool-delegate", "data-testid": "tool-delegate", "data-status": status || "" },
      el(
        "p",
        {},
        `Delegated to ${profile || "another profile"}: ${state} · `,
        counted ? el("span", { "data-testid": "tool-delegate-progress", text: counted }) : null,
        counted ? " · " : null,
        el("a", { href: `/jobs/${encodeURIComponent(job)}/`, target: "_blank", rel: "noopener", "data-testid": "tool-delegate-link", text: "its transcript" }),
      ),
    );
    const text = progress && typeof progress.text === "string" ? progress.text.trim() : "";
    if (text && (status === "running" || status === "queued")) {
      // The end of what the child is writing now.
      block.append(el("p", { className: "tool-delegate-text", "data-testid": "tool-delegate-text", text: `…${text}` }));
    }
    return block;
  }
  if (display === undefined || display === null) return null;
  if (display.kind === "command") return renderCommandOutput(display);
  if (isImages(display)) return renderToolImages(display);
  const text = typeof display === "string" ? display : prettyJson(display);
  return el("pre", { className: "tool-display", "data-testid": "tool-display", text });
}

/**
 * A running call's tool reported (a `tool_progress` frame): the card shows `tool.display` in
 * place of what it showed, the rest of the card (an opened "Arguments") left as it is.
 */
export function updateToolDisplay(card, tool) {
  const old = card.querySelector(":scope > .tool-delegate, :scope > .tool-display, :scope > .tool-images, :scope > .tool-command");
  const shown = renderDisplay(tool.display);
  if (old && shown) old.replaceWith(shown);
  else fillToolCard(card, tool);
}
