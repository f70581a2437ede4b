// @ts-check
// The chat's header: its title (an untitled conversation is named after its first message),
// the active skills as chips, and the conversation's own model, thinking level and read-only
// switch, saved through the REST API as they change (a refused choice puts the control back).
// At phone width the settings fold behind one button so the header stays one line.

import { el } from "./dom.js";

/** @typedef {import("./api.js").ChatApi} ChatApi */

export class ChatHeader {
  /**
   * @param {HTMLElement} header the `.chat-header` element
   * @param {ChatApi} api
   * @param {(message: string, kind?: string) => void} notify
   */
  constructor(header, api, notify) {
    this.header = header;
    this.api = api;
    this.notify = notify;
    this.title = document.getElementById("chat-title");
    this.skills = document.getElementById("skills");
    const form = /** @type {HTMLFormElement | null} */ (document.getElementById("model-form"));
    if (form) this.watchModel(form);
    const toggle = /** @type {HTMLButtonElement | null} */ (header.querySelector("[data-testid=settings-toggle]"));
    if (toggle) {
      toggle.hidden = false;
      toggle.addEventListener("click", () => {
        const open = toggle.getAttribute("aria-expanded") !== "true";
        toggle.setAttribute("aria-expanded", String(open));
        header.classList.toggle("is-expanded", open);
      });
    }
  }

  /** The server named the conversation (`started.title`). */
  retitle(title) {
    if (title && this.title) this.title.textContent = title;
  }

  showSkills(names) {
    if (!this.skills || !Array.isArray(names)) return;
    const chips = names.map((name) => el("li", { className: "skill-chip", "data-testid": "skill", text: String(name) }));
    this.skills.querySelector(".skill-list").replaceChildren(...chips);
    this.skills.hidden = chips.length === 0;
  }

  /** @param {HTMLFormElement} form */
  watchModel(form) {
    /** @param {any} control */
    const valueOf = (control) => (control.type === "checkbox" ? control.checked : control.value);
    // What is stored: a refused choice puts the control back.
    const chosen = new Map(Array.from(form.elements, (control) => [/** @type {any} */ (control).name, valueOf(control)]));
    form.addEventListener("change", async (event) => {
      const control = /** @type {any} */ (event.target);
      const value = valueOf(control);
      try {
        await this.api.write("PATCH", "", { [control.name]: value });
        chosen.set(control.name, value);
        if (control.type === "checkbox") {
          this.notify(value ? "Read-only: tools may read, not write." : "Tools may write again.", "info");
        } else {
          const label = control.selectedOptions[0]?.textContent || control.value;
          this.notify(`The next answers use ${control.name === "model" ? "the model" : "thinking"}: ${label}.`, "info");
        }
      } catch (error) {
        if (control.type === "checkbox") control.checked = chosen.get(control.name);
        else control.value = chosen.get(control.name) || "";
        this.notify(error.message);
      }
    });
  }
}
