// The ES module sphinxcontrib-mermaid imports, from the vendored single-file build beside it (no CDN:
// the docs draw their diagrams offline). mermaid.min.js is a classic script that sets globalThis.mermaid.
await new Promise((resolve, reject) => {
  const script = document.createElement("script");
  script.src = new URL("./mermaid.min.js", import.meta.url).href;
  script.onload = resolve;
  script.onerror = () => reject(new Error("could not load the vendored mermaid.min.js"));
  document.head.appendChild(script);
});
export default globalThis.mermaid;
