// @ts-check
// The composer's slash menu: as the user types `/`, the chat's commands and the operators'
// prompt templates that match, with their descriptions. Arrows move, Enter or Tab picks (the
// box then reads `/name `), Escape closes. The server interprets what is sent: this only helps
// typing it.

// The chat's own commands (agents/runs/commands.py), listed before the templates.
export const COMMANDS = [
  { name: "compact", description: "Fold older history now (optionally: what the summary should keep).", command: true },
  { name: "continue", description: "Answer the conversation as it stands, without a new message.", command: true },
  { name: "skill", description: "Activate one of the skills operators offer: /skill <name>.", command: true },
];

/** The prompt templates the page embedded (`[{name, description}]`, a `json_script` with id
 * `id`); none when it holds something else. */
export function embeddedTemplates(id) {
  const node = document.getElementById(id);
  try {
    const list = node ? JSON.parse(node.textContent) : [];
    return Array.isArray(list) ? list.filter((entry) => entry && typeof entry.name === "string") : [];
  } catch {
    return [];
  }
}

/** The entries matching `value` (the whole composer text), or [] when no menu should show:
 * only while the text is a lone `/word` being typed (`//` sends text; a space ends the word). */
export function matches(entries, value) {
  const typed = /^\/([^\s/]*)$/.exec(value);
  if (!typed) return [];
  const prefix = typed[1].toLowerCase();
  return entries.filter((entry) => entry.name.toLowerCase().startsWith(prefix));
}

export class SlashMenu {
  /** `list` is the (hidden) listbox element, `input` the composer's textarea. */
  constructor(list, input, templates) {
    this.list = list;
    this.input = input;
    const names = new Set(COMMANDS.map((entry) => entry.name));
    this.entries = [...COMMANDS, ...templates.filter((entry) => !names.has(entry.name))];
    this.shown = [];
    this.active = -1;
    this.dismissed = null; // the text the user closed the menu on, until it changes
    input.addEventListener("input", () => this.update());
    input.addEventListener("blur", () => this.close());
    // A pick by pointer: `mousedown` keeps the focus in the box (a click would blur it first).
    list.addEventListener("mousedown", (event) => {
      const option = event.target.closest("[role=option]");
      if (!option) return;
      event.preventDefault();
      this.pick(Number(option.dataset.index));
    });
  }

  /** Offer more entries (MCP prompts and resources, loaded later); names already offered are
   * kept as they were. An entry with a `choose()` runs it when picked instead of filling the box. */
  add(entries) {
    const names = new Set(this.entries.map((entry) => entry.name));
    this.entries.push(...entries.filter((entry) => !names.has(entry.name)));
    if (document.activeElement === this.input) this.update();
  }

  get open() {
    return !this.list.hidden;
  }

  update() {
    const value = this.input.value;
    if (value !== this.dismissed) this.dismissed = null;
    this.shown = this.dismissed === null ? matches(this.entries, value) : [];
    if (!this.shown.length) {
      this.close();
      return;
    }
    this.active = Math.min(Math.max(this.active, 0), this.shown.length - 1);
    this.render();
  }

  render() {
    const items = this.shown.map((entry, index) => {
      const option = document.createElement("li");
      option.id = `slash-option-${index}`;
      option.setAttribute("role", "option");
      option.dataset.index = String(index);
      option.dataset.name = entry.name;
      option.dataset.testid = "slash-option";
      option.className = entry.command ? "slash-option is-command" : "slash-option";
      option.setAttribute("aria-selected", String(index === this.active));
      const name = document.createElement("span");
      name.className = "slash-name";
      name.textContent = `/${entry.name}`;
      const description = document.createElement("span");
      description.className = "slash-description";
      description.textContent = entry.description || "";
      option.append(name, description);
      return option;
    });
    this.list.replaceChildren(...items);
    this.list.hidden = false;
    this.input.setAttribute("aria-expanded", "true");
    this.input.setAttribute("aria-activedescendant", `slash-option-${this.active}`);
    items[this.active]?.scrollIntoView({ block: "nearest" });
  }

  close() {
    this.list.hidden = true;
    this.shown = [];
    this.active = -1;
    this.input.setAttribute("aria-expanded", "false");
    this.input.removeAttribute("aria-activedescendant");
  }

  pick(index) {
    const entry = this.shown[index];
    if (!entry) return;
    if (typeof entry.choose === "function") {
      this.input.value = "";
      this.close();
      entry.choose();
      return;
    }
    this.input.value = `/${entry.name} `;
    this.input.setSelectionRange(this.input.value.length, this.input.value.length);
    this.close();
    this.input.dispatchEvent(new Event("input", { bubbles: true }));
    this.input.focus();
  }

  /** Handle a composer keydown while the menu is open; whether it was the menu's key (the
   * caller then does nothing else with it, e.g. Enter does not send). */
  keydown(event) {
    if (!this.open || event.isComposing) return false;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = event.key === "ArrowDown" ? 1 : -1;
      this.active = (this.active + step + this.shown.length) % this.shown.length;
      this.render();
    } else if (event.key === "Enter" && !event.shiftKey && this.input.value === `/${this.shown[this.active]?.name}` && !this.shown[this.active]?.choose) {
      // Typed out already: Enter sends it, as it would without the menu.
      this.close();
      return false;
    } else if ((event.key === "Enter" && !event.shiftKey) || event.key === "Tab") {
      this.pick(this.active);
    } else if (event.key === "Escape") {
      this.dismissed = this.input.value;
      this.close();
    } else {
      return false;
    }
    event.preventDefault();
    return true;
  }
}
