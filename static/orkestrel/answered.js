// @ts-check
// Which model wrote an answer, said quietly beside its "Assistant" label: the model the
// provider reported (else the one called), with both in its tooltip. A `state` frame names
// them by message id (`models`), a `finish` frame for the run that just ended.

export class AnswerModels {
  /** @param {HTMLElement} list the transcript's list */
  constructor(list) {
    this.list = list;
  }

  /** Label every answer `models` names (message id → `{model, response_model}`). */
  show(models) {
    if (!models || typeof models !== "object") return;
    for (const [id, answered] of Object.entries(models)) {
      const li = this.list.querySelector(`li[data-message-id="${CSS.escape(id)}"]`);
      if (li instanceof HTMLElement) this.label(li, answered);
    }
  }

  /** Label the answer item `li` with `answered` (`{model, response_model}`). */
  label(li, answered) {
    const called = typeof answered?.model === "string" ? answered.model : "";
    const reported = typeof answered?.response_model === "string" ? answered.response_model : "";
    if (!called && !reported) return;
    const role = li.querySelector(":scope > .msg-role");
    if (!role) return;
    let span = role.querySelector(":scope > .msg-model");
    if (!span) {
      span = document.createElement("span");
      span.className = "msg-model";
      span.setAttribute("data-testid", "message-model");
      role.append(span);
    }
    span.textContent = reported || called.slice(called.indexOf("/") + 1) || called;
    const title = reported && reported !== called ? `Answered by ${called} (the provider reported ${reported})` : `Answered by ${called || reported}`;
    span.setAttribute("title", title);
    span.setAttribute("aria-label", title);
  }
}
