// @ts-check
// The conversation sidebar of the chat page (templates/conversations/_sidebar.html): new chat,
// the user's conversations (pinned, then by day), search with the server's snippets, each
// row's actions (rename, pin, archive, export, delete after a confirmation) and import. It
// talks to the server through the REST API only (sidebar-api.js). Wide screens show it as a
// column that collapses to its bar; narrow ones (phones) as a drawer over the chat.

import { el } from "./dom.js";
import { ConversationApi } from "./sidebar-api.js";
import { ConversationList, ConversationRow, LinkKeys, Status, find } from "./sidebar-list.js";

/** @typedef {import("./sidebar-api.js").Conversation} Conversation */

const DRAWER = window.matchMedia("(max-width: 47.99rem)");
const COLLAPSED_KEY = "orkestrel.sidebar.collapsed";
const SEARCH_DELAY_MS = 200;

/** The search box: the server's matches with their snippets in place of the lists. */
class SearchBox {
  /** @param {HTMLElement} root @param {ConversationApi} api @param {ConversationList} list @param {Status} status */
  constructor(root, api, list, status) {
    this.api = api;
    this.list = list;
    this.status = status;
    this.input = /** @type {HTMLInputElement} */ (find(root, "#sidebar-search"));
    this.results = find(root, ".sidebar-results");
    this.browse = [find(root, ".sidebar-lists"), find(root, ".sidebar-archive")];
    this.asked = 0;
    /** @type {number | undefined} */ this.timer = undefined;
    this.input.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = window.setTimeout(() => this.search(), SEARCH_DELAY_MS);
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.input.value) {
        event.preventDefault();
        event.stopPropagation();
        this.input.value = "";
        this.search();
      }
    });
  }

  async search() {
    const query = this.input.value.trim();
    const asked = ++this.asked;
    const searching = query.length > 0;
    this.results.hidden = !searching;
    for (const node of this.browse) node.hidden = searching;
    find(this.list.root, ".sidebar-more").hidden = searching || !this.list.next;
    if (!searching) {
      this.list.query = "";
      this.results.replaceChildren();
      this.status.show("");
      return;
    }
    let page;
    try {
      page = await this.api.search(query);
    } catch (error) {
      if (asked === this.asked) this.status.show(error.message, true);
      return;
    }
    if (asked !== this.asked) return; // a later search is on its way
    this.list.query = query;
    const rows = page.results.map((row) => new ConversationRow(row, this.list).node);
    this.results.replaceChildren(el("ul", { className: "sidebar-list", "aria-label": "Search results" }, ...rows));
    const count = page.results.length;
    const more = page.next ? "+" : "";
    this.status.show(count ? `${count}${more} found for “${query}”.` : `No conversation matches “${query}”.`);
  }
}

/** The whole sidebar: its column or drawer, its shortcuts, new chat and import. */
class Sidebar {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    const token = find(root, "input[name=csrfmiddlewaretoken]")?.value || "";
    this.api = new ConversationApi(root.dataset.apiUrl || "/api/conversations/", token, root.dataset.loginUrl || "/");
    this.status = new Status(find(root, ".sidebar-status"));
    this.list = new ConversationList(root, this.api, this.status);
    this.search = new SearchBox(root, this.api, this.list, this.status);
    new LinkKeys(root);
    this.panel = find(root, ".sidebar-panel");
    this.toggle = find(root, ".sidebar-toggle");
    this.backdrop = find(root, ".sidebar-backdrop");
    this.fileInput = /** @type {HTMLInputElement} */ (find(root, ".sidebar-import-input"));
    this.toggle.addEventListener("click", () => this.setOpen(!this.isOpen(), true));
    this.backdrop.addEventListener("click", () => this.setOpen(false, true));
    find(root, ".sidebar-new").addEventListener("click", () => this.newChat());
    find(root, ".sidebar-import-button").addEventListener("click", () => this.fileInput.click());
    this.fileInput.addEventListener("change", () => this.importFile());
    root.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && DRAWER.matches && this.isOpen()) {
        event.stopPropagation();
        this.setOpen(false, true);
      }
    });
    document.addEventListener("keydown", (event) => this.shortcut(event));
    DRAWER.addEventListener("change", () => this.setOpen(!DRAWER.matches && !this.collapsedByChoice(), false));
    this.setOpen(!DRAWER.matches && !this.collapsedByChoice(), false);
    this.list.load();
  }

  collapsedByChoice() {
    try {
      return window.localStorage.getItem(COLLAPSED_KEY) === "true";
    } catch {
      return false;
    }
  }

  isOpen() {
    return this.root.dataset.state === "open";
  }

  /** @param {boolean} open @param {boolean} byPerson */
  setOpen(open, byPerson) {
    this.root.dataset.state = open ? "open" : "closed";
    this.root.classList.toggle("is-drawer", DRAWER.matches);
    this.panel.hidden = !open;
    this.backdrop.hidden = !(open && DRAWER.matches);
    this.toggle.setAttribute("aria-expanded", String(open));
    if (!byPerson) return;
    if (!DRAWER.matches) {
      try {
        window.localStorage.setItem(COLLAPSED_KEY, String(!open));
      } catch {
        // Storage refused (private mode): the choice lasts this page only.
      }
    }
    if (open && DRAWER.matches) this.search.input.focus();
    if (!open) this.toggle.focus();
  }

  /** Ctrl/Cmd+K or "/" (outside a text field) searches; Ctrl/Cmd+Shift+O starts a chat. @param {KeyboardEvent} event */
  shortcut(event) {
    const target = /** @type {HTMLElement} */ (event.target);
    const typing = target.closest?.("input, textarea, select, [contenteditable]") !== null;
    const command = event.ctrlKey || event.metaKey;
    if ((command && !event.shiftKey && event.key.toLowerCase() === "k") || (event.key === "/" && !typing && !command)) {
      event.preventDefault();
      if (!this.isOpen()) this.setOpen(true, true);
      this.search.input.focus();
      this.search.input.select();
    } else if (command && event.shiftKey && event.key.toLowerCase() === "o") {
      event.preventDefault();
      this.newChat();
    }
  }

  async newChat() {
    try {
      const made = await this.api.create();
      window.location.assign(this.list.chatUrl(made.id));
    } catch (error) {
      this.status.show(`Could not start a conversation: ${error.message}`, true);
    }
  }

  async importFile() {
    const file = this.fileInput.files?.[0];
    if (!file) return;
    this.status.show(`Importing ${file.name}…`);
    try {
      const made = await this.api.importLines(await file.text());
      window.location.assign(this.list.chatUrl(made.id));
    } catch (error) {
      this.status.show(`Could not import ${file.name}: ${error.message}`, true);
    } finally {
      this.fileInput.value = "";
    }
  }
}

const mount = document.getElementById("sidebar");
if (mount) new Sidebar(mount);
