// @ts-check
// The websocket with automatic reconnection. The backoff is the only timer on the page: a
// background tab may delay it, so coming back to the tab (or back online) reconnects at once.

const UNAUTHENTICATED = 4401;
const FORBIDDEN = 4403;

export class ChatSocket {
  /**
   * @param {string} path the socket path, e.g. /ws/conversations/<id>/
   * @param {object} hooks {onOpen(), onFrame(frame), onStatus(state, text), onUnauthenticated()}
   */
  constructor(path, hooks) {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    this.url = `${scheme}//${window.location.host}${path}`;
    this.hooks = hooks;
    this.socket = null;
    this.attempts = 0;
    this.timer = null;
    this.refused = false;
    const now = () => this.reconnectNow();
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") now();
    });
    window.addEventListener("online", now);
    window.addEventListener("focus", now);
  }

  /** Send one frame; false when the socket is not open (nothing is queued). */
  send(frame) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  connect() {
    if (this.refused || (this.socket && this.socket.readyState <= WebSocket.OPEN)) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.hooks.onStatus("connecting", this.attempts ? "Reconnecting…" : "Connecting…");
    const ws = new WebSocket(this.url);
    this.socket = ws;
    this.hooks.onOpen();
    ws.addEventListener("open", () => {
      if (this.socket !== ws) return;
      this.attempts = 0;
      this.hooks.onStatus("open", "Connected");
    });
    ws.addEventListener("message", (event) => {
      if (this.socket !== ws) return;
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      this.hooks.onFrame(frame);
    });
    ws.addEventListener("close", (event) => {
      if (this.socket !== ws) return;
      this.socket = null;
      if (event.code === UNAUTHENTICATED) {
        this.hooks.onUnauthenticated();
      } else if (event.code === FORBIDDEN) {
        this.refused = true;
        this.hooks.onStatus("refused", "This conversation is not yours.");
      } else {
        this._schedule();
      }
    });
  }

  _schedule() {
    if (this.timer) return;
    const delay = Math.min(15000, 500 * 2 ** this.attempts) * (0.75 + Math.random() * 0.5);
    this.attempts += 1;
    this.hooks.onStatus("closed", "Disconnected. Reconnecting…");
    this.timer = setTimeout(() => this.connect(), delay);
  }

  reconnectNow() {
    if (!this.socket && !this.refused) {
      this.attempts = Math.min(this.attempts, 1);
      this.connect();
    }
  }
}
