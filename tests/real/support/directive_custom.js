// Like newer omo-senpi versions: a hidden custom message carries the full directive
// (`before_agent_start`, display off; stored as a custom_message entry, sent as a user message) —
// here on every prompt that says "ulw", so that copies repeat across turns.
import { DIRECTIVE, SAYS_ULW } from "./directive_common.js";

export default function directiveCustom(pi) {
    pi.on("before_agent_start", (event) => (SAYS_ULW.test(event.prompt)
        ? { message: { customType: "omo-ultrawork:directive", content: DIRECTIVE, display: false } } : undefined));
}
