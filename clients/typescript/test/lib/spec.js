// Reads the operations of kairos's openapi.yaml with a line scanner (the
// file's layout is fixed: "  /path:", "    get:", "      operationId: x"),
// so that the tests need no YAML parser.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const specPath = fileURLToPath(new URL("../../../../openapi.yaml", import.meta.url));

/** Operations the client has no method for, and why (as the Go client's spec test). */
export const notAPICalls = {
  metrics: "Prometheus text for a scraper",
  adminPage: "HTML for a browser",
  adminAsset: "the admin page's files",
  getOpenAPI: "this document",
};

/** operations returns {operationId: {method, path}} of openapi.yaml. */
export function operations(text = readFileSync(specPath, "utf8")) {
  const ops = {};
  let path = null;
  let method = null;
  let inPaths = false;
  for (const line of text.split("\n")) {
    if (/^paths:\s*$/.test(line)) {
      inPaths = true;
      continue;
    }
    if (inPaths && /^\S/.test(line)) inPaths = false;
    if (!inPaths) continue;
    let m;
    if ((m = /^  (\/\S*):\s*$/.exec(line))) {
      path = m[1];
      method = null;
    } else if ((m = /^    (get|put|post|patch|delete):\s*$/.exec(line))) {
      method = m[1].toUpperCase();
    } else if ((m = /^      operationId:\s*(\w+)\s*$/.exec(line)) && path && method) {
      ops[m[1]] = { method, path };
    }
  }
  return ops;
}

/**
 * schemaProperties returns the property names of components.schemas[name]
 * of openapi.yaml, sorted (the file's layout: "    Name:", then
 * "      properties:" and "        field:").
 */
export function schemaProperties(name, text = readFileSync(specPath, "utf8")) {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l === `    ${name}:`);
  if (start < 0) throw new Error(`openapi.yaml has no schema ${name}`);
  const props = [];
  let inProps = false;
  for (const line of lines.slice(start + 1)) {
    if (/^ {0,4}\S/.test(line)) break; // the next schema
    if (/^      properties:\s*$/.test(line)) {
      inProps = true;
      continue;
    }
    if (/^      \S/.test(line)) inProps = false;
    const m = /^        (\w+):\s*$/.exec(line);
    if (inProps && m) props.push(m[1]);
  }
  return props.sort();
}
