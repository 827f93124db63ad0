#!/usr/bin/env node
import { readFileSync } from "node:fs";
const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
if (process.argv.includes("--version")) {
    console.log(pkg.version);
}
else {
    console.log(`senpi ${pkg.version} (sample package written by senpi-guard's tests)`);
}
//# sourceMappingURL=cli.js.map
