// Progressive enhancement only: every control here also works as a plain link or form.
(function () {
  "use strict";
  // Close the application switcher with Escape, and when clicking elsewhere.
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      document.querySelectorAll("details.switcher[open]").forEach(function (d) { d.open = false; });
    }
  });
  document.addEventListener("click", function (event) {
    document.querySelectorAll("details.switcher[open]").forEach(function (d) {
      if (!d.contains(event.target)) { d.open = false; }
    });
  });
})();
