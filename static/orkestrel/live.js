// @ts-check
// One streaming run in the transcript. A run can span several assistant turns (text, then tool
// calls, then more text); each turn gets its own `li.msg-assistant`, as the committed messages
// will, so the page looks the same before and after a `state` re-render. The answer text is
// rendered as markdown while it streams (markdown.js), and kept as it is when it is committed.

import { MarkdownStream } from "./markdown.js";
import { ElapsedClock } from "./running.js";
import { el } from "./dom.js";
import {
  copyButton,
  fillBody,
  forkButton,
  markItem,
  renderThinking,
  thinkingLabel,
  thinkingSeconds,
  SOURCES,
} from "./render.js";
import { fillToolCard, renderToolCard, updateToolDisplay } from "./tool_cards.js";

export class LiveRun {
  /**
   * @param {string} id the run id
   * @param {HTMLOListElement} transcript
   */
  constructor(id, transcript) {
    this.id = String(id);
    this.transcript = transcript;
    this.turns = []; // {li, body, stream, thinking, thinkingText, thinkingSeconds, cards: Map, messageId}
    // Cards of calls an earlier run made (a decision on a held call resumes the run under a new
    // id): they are updated where they are, never drawn again.
    this.earlier = new Map();
    this.settled = false;
    this.aborted = null; // the reason of an `abort` frame
    this.exhausted = undefined; // the limit of an `exhaust` frame
    // How long each running call has run, on its card.
    this.clock = new ElapsedClock();
  }

  get current() {
    return this.turns[this.turns.length - 1] || null;
  }

  _turn() {
    const li = el(
      "li",
      { className: "msg msg-assistant is-live", "data-role": "assistant" },
      el("div", { className: "msg-role", text: "Assistant" }),
    );
    this.transcript.append(li);
    const turn = {
      li,
      body: null,
      stream: null,
      thinking: null,
      thinkingText: null,
      thinkingSeconds: 0,
      cards: new Map(),
      messageId: null,
    };
    this.turns.push(turn);
    return turn;
  }

  _body(turn) {
    if (!turn.body) {
      turn.body = el("div", { className: "msg-body streaming", "aria-live": "polite", "aria-busy": "true" });
      turn.stream = new MarkdownStream(turn.body);
      // The answer text goes above this turn's tool cards.
      const firstCard = turn.li.querySelector(":scope > .tool-card");
      turn.li.insertBefore(turn.body, firstCard);
    }
    return turn.body;
  }

  /** Answer text: a new turn starts once the current one has dispatched tools. */
  token(content) {
    let turn = this.current;
    if (!turn || turn.cards.size || turn.messageId) turn = this._turn();
    this._body(turn);
    turn.stream.append(content);
  }

  /** Reasoning text, in a collapsed `<details>` above the turn's answer. */
  think(content) {
    let turn = this.current;
    if (!turn || turn.cards.size || turn.body || turn.messageId) turn = this._turn();
    this._thinking(turn).appendData(content);
  }

  /** The turn's reasoning block (made on first use, as a stored message shows it); its text. */
  _thinking(turn) {
    if (!turn.thinking) {
      turn.thinkingText = document.createTextNode("");
      turn.thinking = renderThinking("", thinkingLabel());
      turn.thinking.querySelector(".thinking-body").append(turn.thinkingText);
      turn.li.insertBefore(turn.thinking, turn.li.querySelector(":scope > .msg-role").nextSibling);
    }
    return turn.thinkingText;
  }

  /** A thinking block ended after `seconds`: its turn's summary says how long it thought. */
  thought(seconds) {
    for (let index = this.turns.length - 1; index >= 0; index -= 1) {
      const turn = this.turns[index];
      const summary = turn.thinking?.querySelector("summary");
      if (summary) {
        // A turn's blocks add up, as the stored message counts them.
        if (typeof seconds === "number" && Number.isFinite(seconds)) turn.thinkingSeconds += seconds;
        summary.textContent = thinkingLabel(turn.thinkingSeconds);
        return;
      }
    }
  }

  /** A dispatched tool call (a `tool` frame, or an entry of `state.run.tools`). */
  tool(frame) {
    const call = frame.call || {};
    const result = frame.result || {};
    const tool = {
      id: call.id,
      name: call.name,
      arguments: call.arguments,
      result: "value" in result ? result.value : undefined,
      error: result.error,
      denied: frame.denied,
      reason: frame.reason,
      rule: frame.rule,
      display: frame.display,
    };
    const existing = this._adopt(call.id);
    if (existing) {
      existing.tool = tool;
      this.clock.stop(existing.card);
      fillToolCard(existing.card, tool);
      return;
    }
    let turn = this.current;
    if (!turn || turn.messageId) turn = this._turn();
    this._addCard(turn, tool);
  }

  /** A piece of a call the model is writing (a `tool_call` frame): its card shows it grow. */
  callDelta(frame) {
    const key = `stream:${frame.index}`;
    let entry = this._writing(key);
    if (!entry) {
      let turn = this.current;
      if (!turn || turn.messageId) turn = this._turn();
      const tool = { id: frame.id || "", name: frame.name || "", arguments: "", phase: "writing", key };
      entry = this._addCard(turn, tool, frame.id || key);
    }
    const tool = entry.tool;
    if (frame.name && !tool.name) tool.name = frame.name;
    if (frame.id && !tool.id) tool.id = frame.id;
    tool.arguments += frame.arguments || "";
    fillToolCard(entry.card, tool);
  }

  /** A call starts running (a `tool_execute` frame): its card says so until the result. */
  execute(frame) {
    const call = frame.call || {};
    const tool = { id: call.id, name: call.name, arguments: call.arguments, phase: "running" };
    let entry = this._adopt(call.id);
    if (entry) {
      entry.tool = tool;
      fillToolCard(entry.card, tool);
    } else {
      let turn = this.current;
      if (!turn || turn.messageId) turn = this._turn();
      entry = this._addCard(turn, tool);
    }
    this.clock.start(entry.card, frame.elapsed || 0);
  }

  /** A call still running when this tab joined (an entry of `state.run.running`): its card
   * runs, its clock from `elapsed`, with what its tool reported last. */
  running(entry) {
    const call = entry.call || {};
    this.execute({ call, elapsed: entry.elapsed });
    if (entry.display !== null && entry.display !== undefined) this.progress({ call: call.id, display: entry.display });
  }

  /** A running call's tool reported (a `tool_progress` frame): its card shows the report
   * until the call's `tool` frame (a command's output tail, with its own elapsed time). */
  progress(frame) {
    const entry = this._entry(frame.call);
    if (!entry || entry.tool.result !== undefined || entry.tool.error !== undefined) return;
    entry.tool.display = frame.display;
    updateToolDisplay(entry.card, entry.tool);
    const elapsed = frame.display?.elapsed;
    if (typeof elapsed === "number") this.clock.start(entry.card, elapsed);
    else this.clock.show(entry.card);
  }

  /** The card of call `callId`, or the oldest card still being written (its id may have been
   * re-minted: ids belong to the agent), re-keyed to `callId`. */
  _adopt(callId) {
    const found = this._entry(callId);
    if (found) return found;
    for (const turn of this.turns) {
      for (const [key, entry] of turn.cards) {
        if (entry.tool.phase !== "writing") continue;
        turn.cards.delete(key);
        turn.cards.set(callId, entry);
        entry.card.dataset.callId = callId || "";
        return entry;
      }
    }
    return null;
  }

  _writing(key) {
    for (const turn of this.turns) {
      for (const entry of turn.cards.values()) if (entry.tool.key === key && entry.tool.phase === "writing") return entry;
    }
    return null;
  }

  _addCard(turn, tool, key = tool.id) {
    const card = renderToolCard(tool);
    turn.li.append(card);
    const entry = { card, tool };
    turn.cards.set(key, entry);
    return entry;
  }

  _entry(callId) {
    for (const turn of this.turns) if (turn.cards.has(callId)) return turn.cards.get(callId);
    if (!callId) return null;
    if (this.earlier.has(callId)) return this.earlier.get(callId);
    const card = this.transcript.querySelector(`.tool-card[data-call-id="${CSS.escape(callId)}"]`);
    if (!(card instanceof HTMLElement)) return null;
    const entry = { card, tool: { id: callId, name: card.dataset.toolName || "" } };
    this.earlier.set(callId, entry);
    return entry;
  }

  /**
   * Durable messages: each assistant message claims the oldest uncommitted turn (or a new one)
   * and replaces its streamed text with the sanitized HTML; a tool message fills its card.
   * Returns the messages that belong to no turn of this run (a user message, say).
   */
  commit(messages) {
    const leftover = [];
    for (const message of messages) {
      if (message.role === "assistant") {
        const turn = this.turns.find((candidate) => !candidate.messageId) || this._turn();
        turn.messageId = message.id;
        turn.li.dataset.messageId = message.id;
        turn.li.classList.remove("is-live");
        if (message.content && !turn.li.querySelector(".msg-copy")) turn.li.append(copyButton());
        if (message.content) SOURCES.set(turn.li, message.content);
        if (!turn.li.querySelector(".msg-fork")) turn.li.append(forkButton(message.id));
        if (message.thinking) {
          // The stored reasoning and its duration: the turn reads as it will after a reload.
          this._thinking(turn).data = message.thinking;
          turn.thinking.querySelector("summary").textContent = thinkingLabel(thinkingSeconds(message), true);
        }
        if (message.content && message.html && turn.stream) turn.stream.finish(message.content);
        else if (message.content) {
          turn.stream?.close();
          fillBody(this._body(turn), message);
        } else if (turn.body && !turn.stream?.text) {
          turn.stream?.close();
          turn.body.remove();
          turn.body = null;
          turn.stream = null;
        }
        for (const call of message.calls || []) {
          if (!this._adopt(call.id)) {
            this._addCard(turn, { id: call.id, name: call.name, arguments: call.arguments });
          }
        }
      } else if (message.role === "tool") {
        const entry = this._entry(message.tool_call_id);
        if (!entry) {
          leftover.push(message);
        } else if (entry.tool.result === undefined && entry.tool.error === undefined) {
          entry.tool.result = message.content;
          this.clock.stop(entry.card);
          fillToolCard(entry.card, entry.tool);
        }
      } else {
        leftover.push(message);
      }
    }
    return leftover;
  }

  /** The run settled: streaming ends; an abort, a failure or an exhausted limit leaves a
   * note (`mark`: the answer is marked `failed` or `stopped` too, as a reload shows it). */
  finish(result, note, mark = null) {
    this.settled = true;
    this.clock.stopAll();
    for (const turn of this.turns) {
      turn.li.classList.remove("is-live");
      if (turn.stream) turn.stream.flush();
      if (turn.body) {
        turn.body.classList.remove("streaming");
        turn.body.removeAttribute("aria-busy");
        turn.body.removeAttribute("aria-live");
      }
    }
    const last = this.current;
    // A provider that does not stream still answers: show the final text if nothing did.
    if (result && result.content && !this.turns.some((turn) => turn.body)) {
      const turn = last && !last.messageId ? last : this._turn();
      this._body(turn);
      turn.stream.finish(result.content);
    }
    if (note) {
      const turn = this.current || this._turn();
      if (mark) markItem(turn.li, { kind: mark, text: note });
      else turn.li.append(el("p", { className: "msg-note run-note", text: note }));
    }
  }

  /** The latest answer body of this run, if any. */
  answerBody() {
    for (let index = this.turns.length - 1; index >= 0; index -= 1) {
      if (this.turns[index].body) return this.turns[index].body;
    }
    return null;
  }
}
