// @ts-check
// The header's "Tools" readout: what the conversation's agent can do (README, "Tools"), read
// from `GET /api/conversations/{id}/tools/` each time the disclosure opens (the operator may
// have changed the profile since). Each tool says whether it runs in read-only mode and
// whether a person may be asked to approve its calls.

/** @typedef {import("./api.js").ChatApi} ChatApi */

const READ_ONLY = {
  all: "read-only",
  some: "some calls read-only",
  none: "writes",
};

export class ToolsReadout {
  /**
   * @param {HTMLDetailsElement} box the `#chat-tools` disclosure
   * @param {ChatApi} api
   */
  constructor(box, api) {
    this.box = box;
    this.api = api;
    this.list = /** @type {HTMLElement} */ (box.querySelector(".tools-list"));
    this.status = /** @type {HTMLElement} */ (box.querySelector(".tools-status"));
    box.addEventListener("toggle", () => {
      if (box.open) this.load();
    });
  }

  async load() {
    this.status.textContent = "Loading…";
    this.list.setAttribute("aria-busy", "true");
    try {
      const catalogue = await this.api.get(`${this.api.apiUrl}tools/`);
      this.render(catalogue);
    } catch (error) {
      this.status.textContent = `The tools could not be read (${error.message}).`;
    } finally {
      this.list.removeAttribute("aria-busy");
    }
  }

  /** @param {{read_only: boolean, tools: any[]}} catalogue */
  render(catalogue) {
    const tools = Array.isArray(catalogue?.tools) ? catalogue.tools : [];
    const items = tools.map((tool) => {
      const item = document.createElement("li");
      item.className = "tools-entry";
      item.dataset.testid = "tools-entry";
      item.dataset.tool = String(tool.name);
      const name = document.createElement("code");
      name.className = "tools-name";
      name.textContent = String(tool.name);
      item.append(name);
      const notes = [READ_ONLY[tool.read_only] || (tool.safe ? READ_ONLY.all : READ_ONLY.none)];
      if (tool.asks) notes.push("may ask you first");
      if (tool.source === "mcp") notes.push("MCP");
      const badges = document.createElement("span");
      badges.className = "tools-notes";
      badges.textContent = ` (${notes.join(", ")})`;
      item.append(badges);
      if (tool.description) {
        const text = document.createElement("p");
        text.className = "tools-description";
        text.textContent = String(tool.description);
        item.append(text);
      }
      return item;
    });
    this.list.replaceChildren(...items);
    const count = `${tools.length} tool${tools.length === 1 ? "" : "s"}`;
    this.status.textContent = tools.length
      ? `${count}${catalogue.read_only ? "; read-only mode: only read-only calls run" : ""}.`
      : "This agent has no tools.";
  }
}
