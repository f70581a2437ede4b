// @ts-check
// The sidebar's conversation lists (templates/conversations/_sidebar.html): each row (its
// title, a search snippet, its actions: rename, pin, archive, export, delete after a
// confirmation), the lists it sits in (pinned, then by day; archived on demand), the keys
// that walk them, and the status line that says how an action went. sidebar.js wires them
// to the search box, the drawer and import.

import { el } from "./dom.js";
import { ApiError, ConversationApi } from "./sidebar-api.js";
import { download, fileName, markdownFromExport } from "./sidebar-transfer.js";

/** @typedef {import("./sidebar-api.js").Conversation} Conversation */

const DAY_MS = 86_400_000;

/** @param {ParentNode} root @param {string} selector @returns {any} */
export function find(root, selector) {
  return root.querySelector(selector);
}

/** What a row is called: its title, else the start of its first message. @param {Conversation} row */
export function label(row) {
  return row.title || row.preview || "New conversation";
}

/**
 * The group a conversation's day falls in: Today, Yesterday, Previous 7 days, else its month.
 * @param {Date} when @param {Date} now
 */
export function dayGroup(when, now) {
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  if (when.getTime() >= midnight) return "Today";
  if (when.getTime() >= midnight - DAY_MS) return "Yesterday";
  if (when.getTime() >= midnight - 7 * DAY_MS) return "Previous 7 days";
  return when.toLocaleDateString(undefined, { month: "long", year: "numeric" });
}

/**
 * The server's snippet (escaped text with `<mark>`s) as nodes: only its text and its marks are
 * kept, whatever it holds.
 * @param {string} html
 */
function snippetNodes(html) {
  const parsed = new DOMParser().parseFromString(`<p>${html}</p>`, "text/html").body;
  /** @type {Node[]} */
  const nodes = [];
  for (const node of Array.from(parsed.firstChild?.childNodes || [])) {
    if (node.nodeName === "MARK") nodes.push(el("mark", { text: node.textContent }));
    else nodes.push(document.createTextNode(node.textContent || ""));
  }
  return nodes;
}

/** Arrow keys, Home and End move between the links of `root`. */
export class LinkKeys {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    root.addEventListener("keydown", (event) => this.onKey(event));
  }

  links() {
    return /** @type {HTMLElement[]} */ (
      Array.from(this.root.querySelectorAll("a.sidebar-link")).filter(
        (link) => /** @type {HTMLElement} */ (link).offsetParent !== null,
      )
    );
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    const links = this.links();
    const target = /** @type {HTMLElement} */ (event.target);
    const at = links.indexOf(target);
    let next = -1;
    if (event.key === "ArrowDown") next = target.matches("input[type=search]") ? 0 : at + 1;
    else if (event.key === "ArrowUp" && at > 0) next = at - 1;
    else if (event.key === "Home" && at >= 0) next = 0;
    else if (event.key === "End" && at >= 0) next = links.length - 1;
    if (next < 0 || next >= links.length || (at < 0 && !target.matches("input[type=search]"))) return;
    event.preventDefault();
    links[next].focus();
  }
}

/** One conversation's row: its link, its actions, its rename field. */
export class ConversationRow {
  /** @param {Conversation} row @param {ConversationList} list */
  constructor(row, list) {
    this.row = row;
    this.list = list;
    const current = row.id === list.current;
    this.link = el("a", {
      className: "sidebar-link",
      href: list.chatUrl(row.id),
      "aria-current": current ? "page" : null,
      "data-testid": "sidebar-link",
    });
    this.link.append(...this.titleNodes());
    const menuId = `sidebar-actions-${row.id}`;
    this.more = el("button", {
      type: "button",
      className: "sidebar-more-actions",
      "aria-expanded": "false",
      "aria-controls": menuId,
      "aria-label": `Actions for ${label(row)}`,
      "data-testid": "row-actions",
      text: "⋯",
    });
    this.actions = el("div", { className: "sidebar-actions", id: menuId, hidden: true });
    for (const [action, text] of this.actionLabels()) {
      const button = el("button", {
        type: "button",
        className: action === "delete" ? "danger" : "",
        "data-action": action,
        "data-testid": `row-${action}`,
        text,
      });
      button.addEventListener("click", () => this.run(action));
      this.actions.append(button);
    }
    this.more.addEventListener("click", () => this.toggleActions());
    this.actions.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation();
        this.toggleActions(false);
        this.more.focus();
      }
    });
    const badge = row.archived ? el("span", { className: "sidebar-badge", text: "Archived" }) : null;
    this.node = el(
      "li",
      { className: "sidebar-row", "data-id": row.id, "data-testid": "sidebar-row" },
      el("div", { className: "sidebar-row-main" }, this.link, badge, this.more),
      this.snippet(),
      this.actions,
    );
  }

  /** The title, its matches marked when it is a search result. */
  titleNodes() {
    const text = label(this.row);
    const query = this.list.query;
    if (!query) return [text];
    /** @type {(Node | string)[]} */
    const nodes = [];
    const lower = text.toLowerCase();
    const needle = query.toLowerCase();
    let at = 0;
    for (let hit = lower.indexOf(needle); hit >= 0 && needle; hit = lower.indexOf(needle, at)) {
      nodes.push(text.slice(at, hit), el("mark", { text: text.slice(hit, hit + needle.length) }));
      at = hit + needle.length;
    }
    nodes.push(text.slice(at));
    return nodes;
  }

  snippet() {
    if (!this.row.snippet) return null;
    return el("p", { className: "sidebar-snippet", "data-testid": "sidebar-snippet" }, ...snippetNodes(this.row.snippet));
  }

  /** @returns {[string, string][]} */
  actionLabels() {
    return [
      ["rename", "Rename"],
      ["pin", this.row.pinned ? "Unpin" : "Pin"],
      ["archive", this.row.archived ? "Unarchive" : "Archive"],
      ["export-jsonl", "Export JSON Lines"],
      ["export-markdown", "Export Markdown"],
      ["delete", "Delete…"],
    ];
  }

  /** @param {boolean} [open] */
  toggleActions(open) {
    const show = open ?? this.actions.hidden;
    this.actions.hidden = !show;
    this.more.setAttribute("aria-expanded", String(show));
    if (show) find(this.actions, "button").focus();
  }

  /** @param {string} action */
  run(action) {
    this.toggleActions(false);
    if (action === "rename") this.rename();
    else this.list.act(action, this.row, this.more);
  }

  rename() {
    const input = /** @type {HTMLInputElement} */ (
      el("input", {
        type: "text",
        className: "sidebar-rename",
        value: this.row.title || label(this.row),
        maxlength: "200",
        "aria-label": "New title",
        "data-testid": "sidebar-rename",
      })
    );
    let done = false;
    const finish = (/** @type {boolean} */ save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      input.replaceWith(this.link);
      if (save && title && title !== this.row.title) this.list.rename(this.row, title);
      else this.link.focus();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        finish(true);
      } else if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(true));
    this.link.replaceWith(input);
    input.focus();
    input.select();
  }
}

/** The user's conversations: pinned, then by day, then (on demand) the archived ones. */
export class ConversationList {
  /** @param {HTMLElement} root @param {ConversationApi} api @param {Status} status */
  constructor(root, api, status) {
    this.root = root;
    this.api = api;
    this.status = status;
    this.current = root.dataset.current || "";
    this.chatTemplate = root.dataset.chatUrl || "";
    this.listUrl = root.dataset.listUrl || "/";
    this.query = "";
    /** @type {Conversation[]} */ this.pinned = [];
    /** @type {Conversation[]} */ this.recent = [];
    /** @type {Conversation[] | null} */ this.archived = null;
    /** @type {string | null} */ this.next = null;
    this.lists = find(root, ".sidebar-lists");
    this.more = find(root, ".sidebar-more");
    this.archivedBox = find(root, ".sidebar-archived");
    this.archivedToggle = find(root, ".sidebar-archive-toggle");
    this.dialog = /** @type {HTMLDialogElement} */ (find(root, ".sidebar-dialog"));
    this.more.addEventListener("click", () => this.loadMore());
    this.archivedToggle.addEventListener("click", () => this.toggleArchived());
  }

  /** @param {string} id */
  chatUrl(id) {
    return this.chatTemplate.replace(this.current, id);
  }

  async load() {
    try {
      const [pinned, recent] = await Promise.all([
        this.api.list({ pinned: "true", archived: "false" }),
        this.api.list({ pinned: "false", archived: "false" }),
      ]);
      this.pinned = pinned.results;
      this.recent = recent.results;
      this.next = recent.next;
      this.render();
    } catch (error) {
      this.status.show(`Could not load your conversations: ${error.message}`, true);
    }
  }

  async loadMore() {
    if (!this.next) return;
    const page = await this.api.page(this.next);
    this.recent.push(...page.results);
    this.next = page.next;
    this.render();
  }

  async toggleArchived() {
    const open = this.archivedBox.hidden;
    this.archivedToggle.setAttribute("aria-expanded", String(open));
    this.archivedBox.hidden = !open;
    if (open && this.archived === null) {
      this.archived = (await this.api.list({ archived: "true" })).results;
    }
    this.render();
  }

  /** @param {string} name @param {Conversation[]} rows @param {string} testid */
  group(name, rows, testid) {
    const heading = el("h2", { className: "sidebar-heading", text: name });
    const list = el("ul", { className: "sidebar-list", "aria-label": name });
    for (const row of rows) list.append(new ConversationRow(row, this).node);
    return el("section", { className: "sidebar-group", "data-testid": testid, "data-group": name }, heading, list);
  }

  render() {
    const groups = [];
    if (this.pinned.length) groups.push(this.group("Pinned", this.pinned, "sidebar-group"));
    const now = new Date();
    /** @type {Map<string, Conversation[]>} */
    const days = new Map();
    for (const row of this.recent) {
      const name = dayGroup(new Date(row.created), now);
      days.set(name, [...(days.get(name) || []), row]);
    }
    for (const [name, rows] of days) groups.push(this.group(name, rows, "sidebar-group"));
    if (!groups.length) groups.push(el("p", { className: "sidebar-empty", text: "No conversations yet." }));
    this.lists.replaceChildren(...groups);
    this.more.hidden = !this.next;
    if (this.archived !== null) {
      const rows = this.archived.map((row) => new ConversationRow(row, this).node);
      this.archivedBox.replaceChildren(
        rows.length
          ? el("ul", { className: "sidebar-list", "aria-label": "Archived" }, ...rows)
          : el("p", { className: "sidebar-empty", text: "Nothing archived." }),
      );
    }
  }

  /** Put `row` back in focus after the list changed (its link, else the list's first). @param {string} id */
  refocus(id) {
    const link = find(this.root, `.sidebar-row[data-id="${id}"] .sidebar-link`) || find(this.root, ".sidebar-link");
    link?.focus();
  }

  /** @param {Conversation} row @param {string} title */
  async rename(row, title) {
    try {
      const saved = await this.api.update(row.id, { title });
      this.replace(row.id, saved);
      if (row.id === this.current) {
        document.title = `${saved.title} · orkestrel`;
        const heading = document.getElementById("chat-title");
        if (heading) heading.textContent = saved.title;
      }
      this.status.show(`Renamed to “${saved.title}”.`);
    } catch (error) {
      this.status.show(error.message, true);
    }
    this.render();
    this.refocus(row.id);
  }

  /** @param {string} id @param {Conversation} saved */
  replace(id, saved) {
    for (const rows of [this.pinned, this.recent, this.archived || []]) {
      const at = rows.findIndex((row) => row.id === id);
      if (at >= 0) rows[at] = { ...rows[at], ...saved };
    }
  }

  /** Move a changed conversation into the list its flags put it in. @param {Conversation} saved */
  place(saved) {
    const without = (/** @type {Conversation[]} */ rows) => rows.filter((row) => row.id !== saved.id);
    this.pinned = without(this.pinned);
    this.recent = without(this.recent);
    if (this.archived) this.archived = without(this.archived);
    const target = saved.archived ? this.archived : saved.pinned ? this.pinned : this.recent;
    if (target) {
      target.push(saved);
      target.sort((a, b) => b.created.localeCompare(a.created));
    }
  }

  /** @param {string} action @param {Conversation} row @param {HTMLElement} opener */
  async act(action, row, opener) {
    try {
      if (action === "pin" || action === "archive") {
        const flag = action === "pin" ? "pinned" : "archived";
        const saved = await this.api.update(row.id, { [flag]: !row[flag] });
        this.place(saved);
        const words = { pinned: ["Pinned", "Unpinned"], archived: ["Archived", "Unarchived"] }[flag];
        this.status.show(`${saved[flag] ? words[0] : words[1]} “${label(saved)}”.`);
        this.render();
        this.refocus(row.id);
      } else if (action === "export-jsonl" || action === "export-markdown") {
        const lines = await this.api.exportLines(row.id);
        if (action === "export-jsonl") download(lines, fileName(label(row), "jsonl"), "application/jsonl");
        else download(markdownFromExport(lines), fileName(label(row), "md"), "text/markdown");
        this.status.show(`Exported “${label(row)}”.`);
        opener.focus();
      } else if (action === "delete") {
        await this.confirmDelete(row, opener);
      }
    } catch (error) {
      this.status.show(error instanceof ApiError ? error.message : String(error), true);
    }
  }

  /** @param {Conversation} row @param {HTMLElement} opener */
  async confirmDelete(row, opener) {
    find(this.dialog, "#sidebar-confirm-text").textContent =
      `Delete “${label(row)}”? Its messages and workspace files are deleted too; this cannot be undone.`;
    this.dialog.returnValue = "";
    this.dialog.showModal();
    await new Promise((done) => this.dialog.addEventListener("close", done, { once: true }));
    if (this.dialog.returnValue !== "delete") {
      opener.focus();
      return;
    }
    await this.api.remove(row.id);
    if (row.id === this.current) {
      window.location.assign(this.listUrl);
      return;
    }
    const index = this.allLinks().findIndex((link) => link.closest(".sidebar-row")?.getAttribute("data-id") === row.id);
    this.pinned = this.pinned.filter((item) => item.id !== row.id);
    this.recent = this.recent.filter((item) => item.id !== row.id);
    if (this.archived) this.archived = this.archived.filter((item) => item.id !== row.id);
    this.render();
    this.status.show(`Deleted “${label(row)}”.`);
    const links = this.allLinks();
    (links[Math.min(index, links.length - 1)] || find(this.root, ".sidebar-new"))?.focus();
  }

  /** @returns {HTMLElement[]} */
  allLinks() {
    return Array.from(this.root.querySelectorAll(".sidebar-lists .sidebar-link, .sidebar-archived .sidebar-link"));
  }
}

/** The live region under the search box: what the last action did, or why it failed. */
export class Status {
  /** @param {HTMLElement} node */
  constructor(node) {
    this.node = node;
  }

  /** @param {string} text @param {boolean} [error] */
  show(text, error = false) {
    this.node.textContent = text;
    this.node.classList.toggle("is-error", error);
  }
}
