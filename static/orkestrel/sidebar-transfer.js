// @ts-check
// Export (JSON Lines as the API gives it, or Markdown made from those records) and import.

/** A file name from a title: `lisbon-in-may.md`. @param {string} title @param {string} ext */
export function fileName(title, ext) {
  const stem = title
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^\p{L}\p{N}]+/gu, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 60);
  return `${stem || "conversation"}.${ext}`;
}

const ROLES = { user: "You", assistant: "Assistant", system: "System", tool: "Tool result" };

/** A fence longer than any run of backticks in `text`. @param {string} text */
function fence(text) {
  const longest = Math.max(2, ...(text.match(/`+/g) || []).map((run) => run.length));
  return "`".repeat(longest + 1);
}

/** @param {string} text @param {string} language */
function codeBlock(text, language = "") {
  const marks = fence(text);
  return `${marks}${language}\n${text}\n${marks}`;
}

/**
 * The conversation as Markdown, from its export's records: the title, then every message
 * (folded sections' originals first, as the export orders them), tool calls as JSON blocks.
 * @param {string} lines the export (JSON Lines)
 */
export function markdownFromExport(lines) {
  const records = lines
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line));
  const head = records.find((record) => record.type === "conversation") || {};
  const parts = [`# ${head.title || "Conversation"}`];
  for (const record of records) {
    if (record.type !== "message") continue;
    const role = ROLES[record.role] || record.role;
    const name = record.role === "tool" && record.tool_call_id ? ` (${record.tool_call_id})` : "";
    parts.push(`## ${role}${name}`);
    if (record.thinking) parts.push(`<details><summary>Thinking</summary>\n\n${record.thinking}\n\n</details>`);
    if (record.content) parts.push(record.role === "tool" ? codeBlock(record.content) : record.content);
    for (const call of record.calls || []) {
      const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments, null, 2);
      parts.push(`**Tool call** \`${call.name}\` (${call.id})\n\n${codeBlock(args || "{}", "json")}`);
    }
    if (record.images?.length) parts.push(`*${record.images.length} image(s) attached*`);
  }
  return parts.join("\n\n") + "\n";
}

/** Hand `text` to the browser as a download named `name`. @param {string} text @param {string} name @param {string} type */
export function download(text, name, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
