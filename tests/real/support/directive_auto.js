// Like the newest omo-senpi versions: on every prompt that says "ulw", a hidden custom message with
// a large `<omo-senpi-ulw-execute>` block whose open tag carries attributes (not in senpi-guard's
// default tag list), a short `<omo-ultrawork-reminder>` (171 bytes, meant to repeat), and a block of
// a name nobody lists. This project's own texts, sized like the real ones.
import { SAYS_ULW } from "./directive_common.js";

const STEPS = [];
for (let i = 0; i < 120; i++) {
    STEPS.push(`step ${String(i).padStart(3, "0")}: execute the plan, verify it, and record the evidence.`);
}
export const EXECUTE = `<omo-senpi-ulw-execute mode="full" version="3">\n${STEPS.join("\n")}\n</omo-senpi-ulw-execute>`;
export const REMINDER = `<omo-ultrawork-reminder>${"Keep going until the work is verified. ".repeat(3).trim()}</omo-ultrawork-reminder>`;
export const NOTES = `<team-notes>\n${"Prefer small commits with tests; name the failing case. ".repeat(14)}\n</team-notes>`;

export default function directiveAuto(pi) {
    pi.on("before_agent_start", (event) => (SAYS_ULW.test(event.prompt)
        ? { message: { customType: "omo-ultrawork:execute", content: `${EXECUTE}\n${REMINDER}\n${NOTES}`,
            display: false } } : undefined));
}
