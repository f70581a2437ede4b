// @ts-check
// The chat page's calls to the server over HTTP, signed in by the session: JSON reads, and
// writes to the REST API carrying the CSRF token.

export class ChatApi {
  /**
   * @param {string} apiUrl this conversation's resource under /api/ (ends in a slash)
   * @param {string} csrfToken the page's CSRF token
   */
  constructor(apiUrl, csrfToken) {
    this.apiUrl = apiUrl;
    this.csrfToken = csrfToken;
  }

  /** GET `url` as this user and parse the JSON answer; throws on an HTTP error. */
  async get(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return response.json();
  }

  /** A write to the REST API (`path` under this conversation's resource, or an absolute
   * path); the parsed answer, or throws the server's first message. */
  async write(method, path, body = undefined) {
    const url = path.startsWith("/") ? path : `${this.apiUrl}${path}`;
    const response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": this.csrfToken },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      const errors = Object.values(answer.errors || {}).flat();
      throw new Error(String(errors[0] || answer.detail || `The server answered ${response.status}.`));
    }
    return answer;
  }
}
