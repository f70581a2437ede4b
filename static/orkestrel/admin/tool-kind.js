// @ts-check
/**
 * A tool's change form shows only its kind's fieldsets (HTTP or Command), as the kind is chosen.
 *
 * Without this script every fieldset shows. A fieldset holding an error is never hidden: the
 * operator must see what the server refused.
 */

class ToolKindFieldsets {
  /** @param {HTMLSelectElement} kind */
  constructor(kind) {
    this.kind = kind;
    /** @type {HTMLFieldSetElement[]} */
    this.fieldsets = Array.from(document.querySelectorAll("fieldset.tool-kind"));
    kind.addEventListener("change", () => this.show());
    this.show();
  }

  show() {
    const wanted = `tool-kind-${this.kind.value}`;
    for (const fieldset of this.fieldsets) {
      const erring = fieldset.querySelector(".errorlist") !== null;
      fieldset.hidden = !fieldset.classList.contains(wanted) && !erring;
    }
  }
}

function start() {
  const kind = document.getElementById("id_kind");
  if (kind instanceof HTMLSelectElement) new ToolKindFieldsets(kind);
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", start);
} else {
  start();
}
