// @ts-check
// The status line under the latest answer: how the answer went, in one plain sentence that
// updates in place (trying again after a model server's error, failed, stopped, interrupted;
// a compaction asked for, then its outcome), the technical detail behind a disclosure, and
// Retry or Continue where there is a way to go on. It replaces the banners that piled up.

import { describeFailure } from "./failures.js";

/** @typedef {"retrying" | "failed" | "stopped" | "interrupted" | "compacting" | "compacted" | "not-compacted"} StatusKind */
/** @typedef {{id: number | string, status: string, stop_reason?: string | null, error?: string | null}} LastRun */

export class RunStatus {
  /**
   * @param {HTMLElement} line the `#turn-note` element (text, disclosure, action button)
   * @param {(runId: string) => Promise<void>} retry asks the server to retry or continue a run
   * @param {(message: string) => void} notify shows why the retry was refused
   */
  constructor(line, retry, notify) {
    this.line = line;
    this.text = /** @type {HTMLElement} */ (line.querySelector(".turn-note-text"));
    this.detail = /** @type {HTMLDetailsElement} */ (line.querySelector(".turn-note-detail"));
    this.detailText = /** @type {HTMLElement} */ (line.querySelector(".turn-note-detail-text"));
    this.action = /** @type {HTMLButtonElement} */ (line.querySelector("[data-testid=retry]"));
    /** @type {StatusKind | null} */
    this.kind = null;
    this.action.addEventListener("click", async () => {
      this.action.disabled = true;
      try {
        await retry(this.action.dataset.run || "");
        this.hide();
      } catch (error) {
        notify(error.message);
      } finally {
        this.action.disabled = false;
      }
    });
  }

  /**
   * Say `text` in place of what the line said.
   * @param {StatusKind} kind
   * @param {string} text
   * @param {{detail?: string, action?: string, run?: string | number}} [more]
   */
  show(kind, text, { detail = "", action = "", run = "" } = {}) {
    this.kind = kind;
    this.line.dataset.kind = kind;
    this.text.textContent = text;
    this.detailText.textContent = detail;
    this.detail.hidden = !detail;
    if (!detail) this.detail.open = false;
    this.action.hidden = !action;
    this.action.textContent = action;
    this.action.dataset.run = String(run);
    this.line.hidden = false;
  }

  hide() {
    this.kind = null;
    this.line.hidden = true;
    delete this.line.dataset.kind;
  }

  /** Hide the line if it says `kind` (a retry that worked, say). */
  settle(kind) {
    if (this.kind === kind) this.hide();
  }

  /** The model server refused for now (a `wait` frame): the `attempt`th retry comes soon. */
  retrying(status, seconds, attempt) {
    const why = status === 429 ? "The model server is rate-limiting requests" : "The model server had an error";
    const wait = Math.max(1, Math.round(seconds || 0));
    this.show("retrying", `${why}; trying again in ${wait} s (retry ${attempt})…`);
  }

  /** The answer of run `run` failed with the server's `message`, after `retries` retries. */
  failed(run, message, retries = 0) {
    const { sentence, detail } = describeFailure(message, retries);
    this.show("failed", `The last answer failed: ${sentence[0].toLowerCase()}${sentence.slice(1)}`, {
      detail,
      action: "Retry",
      run,
    });
  }

  /** The latest run did not finish (a state's `last_run`, or a partial `finish`); null hides. */
  unfinished(/** @type {LastRun | null} */ run, retries = 0) {
    if (!run) {
      this.hide();
    } else if (run.status === "error") {
      this.failed(run.id, run.error || "", retries);
    } else if (run.status === "interrupted") {
      this.show("interrupted", "The last answer was interrupted (the server stopped); what was written is kept.", {
        action: "Continue",
        run: run.id,
      });
    } else {
      const text =
        run.stop_reason === "timeout"
          ? "The last answer ran past the agent's time limit; what was written is kept."
          : "The last answer stopped early; what was written is kept.";
      this.show("stopped", text, { action: "Continue", run: run.id });
    }
  }

  compacting() {
    this.show("compacting", "Compacting the history…");
  }

  /** A compaction folded `count` messages. */
  compacted(count) {
    const what = count ? `${count} earlier message${count === 1 ? " was" : "s were"} summarized` : "earlier messages were summarized";
    this.show("compacted", `History compacted: ${what}.`);
  }

  /** A compaction asked for folded nothing (`nothing_to_compact`) or failed. */
  notCompacted(code, message) {
    if (code === "nothing_to_compact") {
      this.show("not-compacted", "Nothing to compact yet: the history is still short enough.");
    } else {
      this.show("not-compacted", "The history could not be compacted; nothing was changed.", { detail: message });
    }
  }
}
