// The sample chat's own script, as an integration would write it: give each flag control
// the conversation's ids and the texts of its message (properties, set from script).
(() => {
  "use strict";
  const session = "demo-" + (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()));
  document.querySelectorAll(".exchange").forEach((exchange, n) => {
    exchange.querySelectorAll("curator-flag").forEach((flag) => {
      flag.setAttribute("session-id", session);
      flag.setAttribute("message-id", `${session}-${n + 1}`);
      flag.prompt = exchange.querySelector(".user").textContent;
      flag.answer = exchange.querySelector(".assistant").textContent;
      flag.context = exchange.dataset.context || "";
      try { flag.detectorScores = JSON.parse(flag.dataset.scores || "{}"); } catch (_) { flag.detectorScores = {}; }
    });
  });
})();
