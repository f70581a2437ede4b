// @ts-check
// The sidebar's calls to the REST API (`/api/conversations/`), signed in by the session: every
// write carries the CSRF token in `X-CSRFToken`, as keys.js does. A lost session sends the
// person to sign in and back here.

/**
 * @typedef {{ id: string, title: string, preview: string | null, pinned: boolean,
 *   archived: boolean, created: string, updated: string, snippet?: string | null }} Conversation
 * @typedef {{ results: Conversation[], next: string | null }} Page
 */

/** An answer the API refused: its problem `detail` and field `errors`. */
export class ApiError extends Error {
  /** @param {number} status @param {any} data */
  constructor(status, data) {
    const fields = data?.errors ? Object.values(data.errors).flat().join(" ") : "";
    super(fields || data?.detail || `The server answered ${status}.`);
    this.status = status;
  }
}

export class ConversationApi {
  /** @param {string} baseUrl `/api/conversations/` @param {string} csrfToken @param {string} loginUrl */
  constructor(baseUrl, csrfToken, loginUrl) {
    this.baseUrl = baseUrl;
    this.csrfToken = csrfToken;
    this.loginUrl = loginUrl;
  }

  /**
   * One call; the parsed JSON body (or the text for JSON Lines), `null` for a `204`.
   * @param {string} url
   * @param {{ method?: string, json?: any, text?: string, type?: string, accept?: string }} options
   * @returns {Promise<any>}
   */
  async call(url, { method = "GET", json, text, type, accept = "application/json" } = {}) {
    /** @type {Record<string, string>} */
    const headers = { Accept: accept };
    if (method !== "GET") headers["X-CSRFToken"] = this.csrfToken;
    let body;
    if (json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(json);
    } else if (text !== undefined) {
      headers["Content-Type"] = type || "text/plain";
      body = text;
    }
    const response = await fetch(url, { method, headers, body, credentials: "same-origin" });
    if (response.status === 401 || response.status === 403) {
      window.location.assign(this.loginUrl);
      return new Promise(() => {});
    }
    if (response.status === 204) return null;
    const answered = response.headers.get("content-type") || "";
    // JSON and problem JSON, not JSON Lines (`application/jsonl`: an export's text).
    const isJson = /^application\/([\w.-]+\+)?json\s*(;|$)/.test(answered);
    const data = isJson ? await response.json() : await response.text();
    if (!response.ok) throw new ApiError(response.status, isJson ? data : null);
    return data;
  }

  /** @param {Record<string, string>} filters @returns {Promise<Page>} */
  list(filters) {
    return this.call(`${this.baseUrl}?${new URLSearchParams(filters)}`);
  }

  /** @param {string} url a page's `next` @returns {Promise<Page>} */
  page(url) {
    return this.call(url);
  }

  /** @param {string} query @returns {Promise<Page>} */
  search(query) {
    return this.call(`${this.baseUrl}search/?${new URLSearchParams({ q: query })}`);
  }

  /** @returns {Promise<Conversation>} */
  create() {
    return this.call(this.baseUrl, { method: "POST", json: {} });
  }

  /** @param {string} id @param {Partial<Conversation>} changes @returns {Promise<Conversation>} */
  update(id, changes) {
    return this.call(`${this.baseUrl}${id}/`, { method: "PATCH", json: changes });
  }

  /** @param {string} id */
  remove(id) {
    return this.call(`${this.baseUrl}${id}/`, { method: "DELETE" });
  }

  /** The conversation as JSON Lines. @param {string} id @returns {Promise<string>} */
  exportLines(id) {
    return this.call(`${this.baseUrl}${id}/export/`, { accept: "application/jsonl" });
  }

  /** A new conversation from an export. @param {string} lines @returns {Promise<Conversation>} */
  importLines(lines) {
    return this.call(`${this.baseUrl}import/`, {
      method: "POST",
      text: lines,
      type: "application/jsonl",
    });
  }
}
