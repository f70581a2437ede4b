// @ts-check
// The prompts and resources of the conversation's MCP servers, in the composer's slash menu.
// They are loaded the first time the user types `/`. A prompt (`/<server>__<prompt>`) asks for
// its arguments in a small form above the composer, then puts the messages it stands for in the
// box, to read and send. A resource (`/<server>:<name>`) is read and attached to the message
// being written, as a fenced block naming its URI.

/**
 * @typedef {{command: string, server: string, name: string, title: string, description: string,
 *   arguments: {name: string, description: string, required: boolean}[]}} McpPrompt
 * @typedef {{server: string, uri: string, name: string, description: string, mime: string}} McpResource
 * @typedef {{get: (url: string) => Promise<any>, write: (method: string, path: string, body?: any) => Promise<any>, apiUrl: string}} Api
 */

/** A resource's word in the slash menu: `<server>:<name>`, with nothing the menu's `/word` refuses. */
export function resourceWord(resource) {
  return `${resource.server}:${resource.name}`.replace(/[\s/]+/g, "-");
}

/** The composer text for a prompt's messages: the user's as they are, others labelled. */
export function promptText(messages) {
  return messages
    .map((message) => (message.role === "user" ? message.text : `(${message.role}) ${message.text}`))
    .join("\n\n");
}

/** A resource's contents as a block to attach to a message. */
export function attachedText(uri, contents) {
  const body = contents.map((part) => part.text).join("\n");
  const fence = body.includes("```") ? "````" : "```";
  return `[Attached: ${uri}]\n${fence}\n${body}\n${fence}`;
}

export class McpOfferings {
  /**
   * @param {{add: (entries: object[]) => void}} menu the composer's slash menu
   * @param {HTMLTextAreaElement} input the composer's box
   * @param {Api} api this conversation's REST API
   * @param {(message: string, kind?: string) => void} notify
   * @param {HTMLElement} composer the composer form (the prompt form goes before it)
   */
  constructor(menu, input, api, notify, composer) {
    this.menu = menu;
    this.input = input;
    this.api = api;
    this.notify = notify;
    this.composer = composer;
    this.loaded = false;
    /** The open prompt form. @type {HTMLFormElement | null} */
    this.form = null;
    input.addEventListener("input", () => {
      if (!this.loaded && input.value.startsWith("/")) this.load();
    });
  }

  async load() {
    this.loaded = true;
    const base = `${this.api.apiUrl}mcp/`;
    const [prompts, resources] = await Promise.all([
      this.api.get(`${base}prompts/`).catch(() => ({ prompts: [] })),
      this.api.get(`${base}resources/`).catch(() => ({ resources: [] })),
    ]);
    /** @type {McpPrompt[]} */
    const offered = prompts.prompts || [];
    /** @type {McpResource[]} */
    const attachable = resources.resources || [];
    this.menu.add([
      ...offered.map((prompt) => ({
        name: prompt.command,
        description: prompt.description || prompt.title || `A prompt of ${prompt.server}`,
        mcp: "prompt",
        choose: () => this.choose(prompt),
      })),
      ...attachable.map((resource) => ({
        name: resourceWord(resource),
        description: `Attach ${resource.uri}${resource.description ? ` (${resource.description})` : ""}`,
        mcp: "resource",
        choose: () => this.attach(resource),
      })),
    ]);
  }

  /** @param {McpPrompt} prompt */
  choose(prompt) {
    if (!prompt.arguments.length) {
      this.insert(prompt, {});
      return;
    }
    this.close();
    const form = document.createElement("form");
    form.className = "mcp-prompt-form";
    form.dataset.testid = "mcp-prompt-form";
    const legend = document.createElement("p");
    legend.className = "mcp-prompt-title";
    legend.textContent = `/${prompt.command}: ${prompt.description || prompt.title || prompt.name}`;
    form.append(legend);
    prompt.arguments.forEach((argument, index) => {
      const id = `mcp-argument-${index}`;
      const label = document.createElement("label");
      label.htmlFor = id;
      label.textContent = argument.required ? `${argument.name} (required)` : argument.name;
      const field = document.createElement("textarea");
      field.id = id;
      field.name = argument.name;
      field.rows = 2;
      field.required = argument.required;
      if (argument.description) field.placeholder = argument.description;
      form.append(label, field);
    });
    const insert = document.createElement("button");
    insert.type = "submit";
    insert.textContent = "Insert";
    insert.dataset.testid = "mcp-prompt-insert";
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.textContent = "Cancel";
    cancel.addEventListener("click", () => this.close(true));
    const actions = document.createElement("div");
    actions.className = "mcp-prompt-actions";
    actions.append(insert, cancel);
    form.append(actions);
    form.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        this.close(true);
      }
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const values = {};
      for (const field of form.querySelectorAll("textarea")) {
        if (field.value.trim()) values[field.name] = field.value;
      }
      this.insert(prompt, values);
    });
    this.composer.before(form);
    this.form = form;
    /** @type {HTMLElement | null} */ (form.querySelector("textarea"))?.focus();
  }

  /** Get `prompt` with `values` and put its text in the box. */
  async insert(prompt, values) {
    try {
      const answer = await this.api.write("POST", "mcp/prompts/", { server: prompt.server, prompt: prompt.name, arguments: values });
      this.close();
      this.input.value = promptText(answer.messages || []);
      this.input.dispatchEvent(new Event("input", { bubbles: true }));
      this.input.focus();
    } catch (error) {
      this.notify(`The prompt /${prompt.command} could not be got: ${error instanceof Error ? error.message : error}`);
    }
  }

  /** Read `resource` and add it to the message being written. @param {McpResource} resource */
  async attach(resource) {
    const query = new URLSearchParams({ server: resource.server, uri: resource.uri });
    try {
      const answer = await this.api.get(`${this.api.apiUrl}mcp/resource/?${query}`);
      const block = attachedText(resource.uri, answer.contents || []);
      const typed = this.input.value.trim();
      this.input.value = typed ? `${typed}\n\n${block}` : `${block}\n\n`;
      this.input.dispatchEvent(new Event("input", { bubbles: true }));
      this.input.focus();
      this.notify(`Attached ${resource.uri}.`, "info");
    } catch (error) {
      this.notify(`${resource.uri} could not be read: ${error instanceof Error ? error.message : error}`);
    }
  }

  /** Remove the prompt form (`refocus`: back to the box). */
  close(refocus = false) {
    this.form?.remove();
    this.form = null;
    if (refocus) this.input.focus();
  }
}
