// The node side of the harness protocol (prove/verify.run_script is the other): the job is one JSON
// document on stdin; the report is one JSON document on stdout after the job's reportTag, so what the
// code under test prints is never taken for it; an error becomes the report {error} (exit code 3).
import { readFileSync } from "node:fs";

export const job = JSON.parse(readFileSync(0, "utf8") || "{}");

export async function report(main) {
    const tag = job.reportTag ?? "";
    try {
        process.stdout.write("\n" + tag + JSON.stringify(await main()) + "\n");
    }
    catch (error) {
        process.stdout.write("\n" + tag + JSON.stringify({ error: String(error && error.message ? error.message : error) }) + "\n");
        process.exitCode = 3;
    }
}
