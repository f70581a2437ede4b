// @ts-check
// Notices: what the page tells the user beside the run (a setting saved, a refused request,
// not connected). One line by the composer that the newest notice replaces in place, never a
// stack of banners out of view; dismissible. How the answer itself went is the status line's
// (status.js).

import { el } from "./dom.js";

export class Notices {
  /** @param {HTMLElement} box the (empty) notices element */
  constructor(box) {
    this.box = box;
    box.addEventListener("click", (event) => {
      const target = /** @type {Element} */ (event.target);
      if (target.closest(".notice-close")) this.clear();
    });
  }

  /**
   * Show `message` in place of the notice shown (errors are announced at once).
   * @param {string} message
   * @param {string} [kind] "error", "warning" or "info"
   */
  notify(message, kind = "error") {
    const notice = el(
      "div",
      { className: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status", "data-testid": "notice" },
      el("span", { className: "notice-text", text: message }),
      el("button", { type: "button", className: "notice-close", "aria-label": "Dismiss", text: "×" }),
    );
    this.box.replaceChildren(notice);
  }

  clear() {
    this.box.replaceChildren();
  }
}
