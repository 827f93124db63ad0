// Like omo-senpi's task component: a hidden custom message carrying a task block, sent once per
// *process* (`before_agent_start`, display off): in print mode, one process per prompt, it comes back
// with every prompt, each copy byte-identical.
const LINES = [];
for (let i = 0; i < 12; i++) {
    LINES.push(`task rule ${i}: keep the todo list current and verify before reporting done.`);
}
export const TASK = `<omo-senpi-task>\n${LINES.join("\n")}\n</omo-senpi-task>`;

export default function directiveTask(pi) {
    let sent = false;
    pi.on("before_agent_start", () => {
        if (sent) {
            return undefined;
        }
        sent = true;
        return { message: { customType: "omo-senpi:task", content: TASK, display: false } };
    });
}
