// Runs a rendered extension's `context` handler directly, for property tests. argv[2] is the
// extension file. One JSON request per stdin line: {"cases": [messages, …]} -> {"outputs":
// [{"whole": messages, "prefixes": [messages, …]}, …]} (inputs are deep-frozen: mutation throws).
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const extension = await import(pathToFileURL(process.argv[2]).href);
let handler = null;
extension.default({ on: (event, h) => { handler = h; } });
const run = (messages) => {
    const result = handler({ type: "context", messages });
    return result === undefined ? messages : result.messages;
};
function freeze(value) {
    if (value !== null && typeof value === "object") {
        Object.freeze(value);
        Object.values(value).forEach(freeze);
    }
    return value;
}
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) {
        continue;
    }
    const { cases } = JSON.parse(line);
    const outputs = cases.map((messages) => {
        const frozen = freeze(structuredClone(messages));
        const whole = run(frozen);
        const prefixes = messages.map((_, k) => run(freeze(structuredClone(messages.slice(0, k + 1)))));
        return { whole, prefixes, mutated: JSON.stringify(frozen) !== JSON.stringify(messages) };
    });
    // each case once more, right after another case (the handler remembers the previous call)
    cases.forEach((messages, index) => {
        outputs[index].again = run(freeze(structuredClone(messages)));
    });
    process.stdout.write(JSON.stringify({ outputs }) + "\n");
}
