// The directive block the directive plugins stamp (this project's own text, ~25 kB like the real one).
const LINES = [];
for (let i = 0; i < 400; i++) {
    LINES.push(`rule ${String(i).padStart(3, "0")}: work until the task is verified end to end; report evidence.`);
}
export const DIRECTIVE = `<ultrawork-mode>\n${LINES.join("\n")}\n</ultrawork-mode>`;
export const SAYS_ULW = /\b(ulw|ultrawork)\b/i;
