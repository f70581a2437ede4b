// @ts-check
/**
 * A scope column's box of names shows only while "Only these" is chosen.
 *
 * Without this script the box always shows; the server reads it only for "Only these".
 */

class AllowList {
  /** @param {HTMLTextAreaElement} names */
  constructor(names) {
    this.names = names;
    /** @type {HTMLInputElement[]} */
    this.modes = Array.from(document.querySelectorAll(`input[name="${names.name}_mode"]`));
    for (const mode of this.modes) mode.addEventListener("change", () => this.show());
    this.show();
  }

  show() {
    const chosen = this.modes.find((mode) => mode.checked);
    this.names.hidden = chosen !== undefined && chosen.value !== "only";
  }
}

function start() {
  for (const names of document.querySelectorAll("textarea[data-allow-list]")) {
    if (names instanceof HTMLTextAreaElement) new AllowList(names);
  }
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", start);
} else {
  start();
}
