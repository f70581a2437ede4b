// @ts-check
// Failures as people read them: one plain sentence per failure, the technical text kept apart
// (shown behind a disclosure). Pure functions, no DOM: the status line, the mark on a failed
// answer and a failed alternative all word a failure the same way, live and after a reload.
//
// The server's messages name the failure for developers ("up/m: connection broken mid-stream
// (RemoteProtocolError)", orkestrel/providers/http.py); each pattern below is one kind of them.

/** @typedef {{sentence: string, detail: string}} Failure */

/** @type {Array<[RegExp, string]>} */
const KINDS = [
  [/connection broken mid-stream|payload is not completed|stream timed out/i, "the model server stopped answering mid-reply"],
  [/stream stalled/i, "the model server went quiet mid-reply, so the answer was ended"],
  [/error mid-stream/i, "the model server reported an error mid-reply"],
  [/cannot connect|connection refused|unreachable/i, "the model server could not be reached"],
  [/no answer within|request timed out/i, "the model server did not answer in time"],
  [/HTTP 40[13]\b|unauthori[sz]ed|forbidden/i, "the model server refused the agent's credentials; an operator needs to check its endpoint"],
  [/HTTP 404\b/i, "the model server does not know this model; an operator needs to check the agent"],
  [/HTTP 429\b|rate.?limit/i, "the model server is rate-limiting requests; try again in a moment"],
  [/HTTP 5\d\d\b/i, "the model server had an internal error"],
  [/HTTP 4\d\d\b/i, "the model server refused the request"],
  [/could not be saved/i, "the answer could not be saved"],
  [/budget/i, "the agent's token budget ran out"],
  [/time limit|timeout|timed out/i, "the answer ran past the agent's time limit"],
];

const COUNTS = ["", "once", "twice"];

/** "retried once", "retried twice", "retried 3 times"; "" for none. */
export function retriesText(retries) {
  if (!retries || retries < 1) return "";
  return `retried ${COUNTS[retries] || `${retries} times`}`;
}

/** The plain clause for a failure's technical `message` (no capital, no full stop). */
export function failureClause(message) {
  const text = String(message || "");
  for (const [pattern, clause] of KINDS) if (pattern.test(text)) return clause;
  return "the model did not answer";
}

/** A failed answer, worded for people: `sentence` (capitalised, one full stop), and the
 * technical `detail` the server gave (for the disclosure). */
export function describeFailure(message, retries = 0) {
  const clause = failureClause(message);
  const tried = retriesText(retries);
  const sentence = `${clause[0].toUpperCase()}${clause.slice(1)}${tried ? `; ${tried}` : ""}.`;
  return { sentence, detail: String(message || "") };
}

/** Why a run stopped early (an abort frame's reason, or a stored run's stop reason), as the
 * note on the answer says it. */
export function stopSentence(reason) {
  const kept = "What was written so far is kept.";
  if (reason === "timeout") return `Stopped: the answer ran past the agent's time limit. ${kept}`;
  if (reason === "budget exhausted") return `Stopped: the agent's token budget ran out. ${kept}`;
  if (reason === "interrupted") return `Interrupted: the server stopped mid-answer. ${kept}`;
  if (reason === "exhaust") return "The agent reached its step limit before finishing.";
  if (!reason || reason === "abort" || reason === "stopped" || reason === "stopped by user") return `Stopped. ${kept}`;
  return `Stopped (${reason}). ${kept}`;
}
