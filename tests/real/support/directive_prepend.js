// Like older omo-senpi versions: the `input` event prepends the full directive to the text of every
// user message that says "ulw" (so it is stored in the session, one byte-identical copy per turn).
import { DIRECTIVE, SAYS_ULW } from "./directive_common.js";

export default function directivePrepend(pi) {
    pi.on("input", (event) => (SAYS_ULW.test(event.text)
        ? { action: "transform", text: `${DIRECTIVE}\n\n${event.text}` } : { action: "continue" }));
}
