/* <curator-flag>: the chat's own flag control, served by the curator console at /embed/flag.js.
 *
 *   <script src="https://console.example.com/embed/flag.js" defer></script>
 *   <curator-flag key="cc_pub_…" region="answer" message-id="msg_42" session-id="sess_7"></curator-flag>
 *
 * Attributes: key, region (prompt | answer), message-id, session-id, end-user-ref (optional).
 * Properties (from script): prompt, context, answer, detectorScores.
 * Nothing is needed inline in the host page: the styles are a constructed stylesheet adopted by
 * the shadow root (not a <style> element or a style attribute), so a strict style-src holds.
 * Every call is asynchronous and every failure is shown in the widget, never thrown at the chat.
 */
(() => {
  "use strict";
  if (!window.customElements || customElements.get("curator-flag")) return;

  const script = document.currentScript;
  const CONSOLE = script && script.src ? new URL(script.src, location.href).origin : location.origin;
  const API = CONSOLE + "/api/v1/embed/";
  const PROPS = ["prompt", "context", "answer", "detectorScores"];
  const THANKS = "Thanks \u2014 a reviewer will look at it";
  const CSS = `
:host{display:inline-block;font:inherit;color:#1b1b1b;max-width:100%}
[hidden]{display:none!important}
button{font:inherit;font-size:.875em;cursor:pointer;border:1px solid #595959;border-radius:4px;background:#fff;color:#1b1b1b;padding:.15em .6em}
button:hover{background:#f0f0f0}
button:focus-visible,input:focus-visible,textarea:focus-visible{outline:2px solid #0b57d0;outline-offset:2px}
button[aria-disabled=true]{cursor:default;color:#4a4a4a;background:#f3f3f3}
.panel{margin-top:.4em;padding:.6em .75em;border:1px solid #8a8a8a;border-radius:6px;background:#fff;max-width:26em}
fieldset{border:0;margin:0;padding:0}
legend{font-weight:600;padding:0;margin-bottom:.3em}
.opt{display:flex;gap:.4em;align-items:baseline;margin:.15em 0}
label.note{display:block;margin-top:.5em}
textarea{display:block;box-sizing:border-box;width:100%;margin-top:.2em;font:inherit;border:1px solid #595959;border-radius:4px;padding:.3em}
.row{display:flex;gap:.5em;margin-top:.6em}
.send{background:#0b57d0;border-color:#0b57d0;color:#fff}
.send:hover{background:#0842a0}
.status{margin:.3em 0 0;font-size:.875em}
.status:empty{display:none}
.status.bad{color:#a30000}`;
  let sheet = null;
  const styles = () => {
    if (!sheet) {
      try { sheet = new CSSStyleSheet(); sheet.replaceSync(CSS); } catch (_) { sheet = false; }
    }
    return sheet || null;
  };

  class Refusal extends Error {
    constructor(kind, detail, retryAfter) { super(detail || kind); this.kind = kind; this.retryAfter = retryAfter; }
  }

  const say = (error) => {
    switch (error.kind) {
      case "origin": return "This site is not allowed to send reports to the reviewers.";
      case "key": return "This report button was refused by the reviewers' console (unknown or revoked key).";
      case "rate": {
        const wait = error.retryAfter > 0 ? ` in ${error.retryAfter} seconds` : " in a minute";
        return `Too many reports right now. Please try again${wait}.`;
      }
      case "network": return "The report could not be sent: the reviewers' console is unreachable.";
      case "setup": return error.message;
      default: return "The report was refused: " + error.message;
    }
  };

  async function call(key, path, body) {
    const headers = { Authorization: "Bearer " + key };
    if (body) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(API + path, {
        method: body ? "POST" : "GET", mode: "cors", credentials: "omit", cache: "no-store",
        headers, body: body ? JSON.stringify(body) : undefined,
      });
    } catch (_) {
      // A refused origin (CORS) and an unreachable console look alike to a script; a
      // request that needs no CORS tells them apart.
      let reachable = false;
      try { await fetch(CONSOLE + "/embed/flag.js", { mode: "no-cors", credentials: "omit", cache: "no-store" }); reachable = true; } catch (_) { /* unreachable */ }
      throw new Refusal(reachable ? "origin" : "network");
    }
    let data = null;
    try { data = await response.json(); } catch (_) { /* not JSON */ }
    if (response.ok) return data;
    const error = (data && data.error) || {};
    if (response.status === 429) throw new Refusal("rate", error.message, parseInt(response.headers.get("Retry-After"), 10));
    if (response.status === 401) throw new Refusal("key", error.message);
    if (response.status === 403) throw new Refusal(error.code === "origin_not_allowed" ? "origin" : "key", error.message);
    const fields = Object.entries(error.fields || {}).map(([name, why]) => `${name}: ${why}`).join("; ");
    throw new Refusal("input", fields || error.message || `HTTP ${response.status}`);
  }

  const problemLists = new Map(); // key -> Promise of [{key, label}]: one request per page and key
  const problemsFor = (key) => {
    if (!problemLists.has(key)) {
      const loading = call(key, "problems").then((data) => data.problems);
      loading.catch(() => problemLists.delete(key)); // a refusal is not kept: the next open asks again
      problemLists.set(key, loading);
    }
    return problemLists.get(key);
  };

  let serial = 0;
  const el = (tag, attrs = {}, text) => {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
  };

  class CuratorFlag extends HTMLElement {
    static get observedAttributes() { return ["region"]; }

    constructor() {
      super();
      this._values = { prompt: "", context: "", answer: "", detectorScores: {} };
      this._sent = false;
      const root = this.attachShadow({ mode: "open" });
      const adopted = styles();
      if (adopted) root.adoptedStyleSheets = [adopted];
      const id = "cf" + (++serial);
      this._button = el("button", { type: "button", class: "flag", "aria-expanded": "false", "aria-controls": id + "p" });
      this._button.append(el("span", { "aria-hidden": "true" }, "\u2691 "), el("span", {}, "Report"));
      this._panel = el("div", { id: id + "p", class: "panel", hidden: "" });
      this._form = el("form", { novalidate: "" });
      const fieldset = el("fieldset");
      this._legend = el("legend", { id: id + "l" });
      this._options = el("div", { class: "opts", role: "radiogroup", "aria-labelledby": id + "l" });
      fieldset.append(this._legend, this._options);
      const noteLabel = el("label", { class: "note", for: id + "n" }, "Anything to add? (optional)");
      this._note = el("textarea", { id: id + "n", rows: "2", maxlength: "2000" });
      const row = el("div", { class: "row" });
      this._send = el("button", { type: "submit", class: "send" }, "Send report");
      this._cancel = el("button", { type: "button" }, "Cancel");
      row.append(this._send, this._cancel);
      this._form.append(fieldset, noteLabel, this._note, row);
      this._panel.append(this._form);
      this._status = el("p", { class: "status", role: "status", "aria-live": "polite" });
      root.append(this._button, this._panel, this._status);
      this._id = id;

      this._button.addEventListener("click", () => this._toggle());
      this._cancel.addEventListener("click", () => this._close(true));
      this._form.addEventListener("submit", (event) => { event.preventDefault(); this._submit(); });
      root.addEventListener("keydown", (event) => {
        if (event.key === "Escape" && !this._panel.hidden) { event.stopPropagation(); this._close(true); }
      });
      this._label();
    }

    connectedCallback() {
      // A property set before this script ran sits on the element itself: take it over.
      for (const name of PROPS) {
        if (Object.prototype.hasOwnProperty.call(this, name)) {
          const value = this[name];
          delete this[name];
          this[name] = value;
        }
      }
    }

    attributeChangedCallback() { this._label(); }

    get prompt() { return this._values.prompt; }
    set prompt(value) { this._values.prompt = value == null ? "" : String(value); }
    get context() { return this._values.context; }
    set context(value) { this._values.context = value == null ? "" : String(value); }
    get answer() { return this._values.answer; }
    set answer(value) { this._values.answer = value == null ? "" : String(value); }
    get detectorScores() { return this._values.detectorScores; }
    set detectorScores(value) { this._values.detectorScores = value && typeof value === "object" ? value : {}; }

    get _region() { return this.getAttribute("region") === "prompt" ? "prompt" : "answer"; }

    _label() {
      const what = this._region === "prompt" ? "this message" : "this answer";
      if (!this._sent) this._button.setAttribute("aria-label", `Report a problem with ${what}`);
      this._legend.textContent = `What is wrong with ${what}?`;
    }

    _tell(text, bad) {
      this._status.textContent = text;
      this._status.classList.toggle("bad", Boolean(bad));
    }

    _missing() {
      const missing = ["key", "message-id", "session-id"].filter((name) => !(this.getAttribute(name) || "").trim());
      return missing.length ? new Refusal("setup", `This report button is not set up (missing ${missing.join(", ")}).`) : null;
    }

    async _toggle() {
      if (this._sent) return;
      if (!this._panel.hidden) { this._close(true); return; }
      const problem = this._missing();
      if (problem) { this._tell(say(problem), true); return; }
      this._tell("Loading\u2026");
      let problems;
      try {
        problems = await problemsFor(this.getAttribute("key").trim());
      } catch (error) {
        this._tell(say(error), true);
        return;
      }
      this._tell("");
      this._render(problems);
      this._panel.hidden = false;
      this._button.setAttribute("aria-expanded", "true");
      const first = this._options.querySelector("input");
      if (first) first.focus();
    }

    _render(problems) {
      const chosen = this._chosen();
      this._options.replaceChildren(...problems.map((problem, index) => {
        const option = el("div", { class: "opt" });
        const input = el("input", { type: "radio", name: this._id + "r", id: `${this._id}r${index}`, value: problem.key });
        if (problem.key === chosen) input.checked = true;
        option.append(input, el("label", { for: input.id }, problem.label));
        return option;
      }));
    }

    _chosen() {
      const input = this._options.querySelector("input:checked");
      return input ? input.value : "";
    }

    _close(refocus) {
      this._panel.hidden = true;
      this._button.setAttribute("aria-expanded", "false");
      if (refocus) this._button.focus();
    }

    async _submit() {
      if (this._busy) return;
      const problem = this._chosen();
      if (!problem) {
        this._tell("Pick what is wrong first.", true);
        const first = this._options.querySelector("input");
        if (first) first.focus();
        return;
      }
      const attr = (name) => (this.getAttribute(name) || "").trim();
      const body = {
        region: this._region, problem, note: this._note.value,
        prompt: this.prompt, context: this.context, answer: this.answer,
        detector_scores: this.detectorScores, message_id: attr("message-id"), session_id: attr("session-id"),
        end_user_ref: attr("end-user-ref"),
      };
      this._busy = true;
      this._send.setAttribute("aria-disabled", "true");
      this._tell("Sending\u2026");
      try {
        await call(attr("key"), "flags", body);
        this._sent = true;
        this._close(false);
        this._button.setAttribute("aria-disabled", "true");
        this._button.setAttribute("aria-label", "Reported");
        this._button.lastChild.textContent = "Reported";
        this._button.focus();
        this._tell(THANKS);
        this.dispatchEvent(new CustomEvent("curator-flag-sent", { bubbles: true, composed: true, detail: { messageId: body.message_id } }));
      } catch (error) {
        this._tell(say(error), true);
      } finally {
        this._busy = false;
        this._send.removeAttribute("aria-disabled");
      }
    }
  }

  customElements.define("curator-flag", CuratorFlag);
})();
