(function () {
  "use strict";
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) { return; }
    var el = document.getElementById(id);
    if (!el) { return; }
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
    }
    el.scrollIntoView({block: "start"});
  }
  window.addEventListener("hashchange", reveal);
  document.addEventListener("DOMContentLoaded", reveal);
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest("button[data-toggle]");
    if (!btn) { return; }
    var open = btn.getAttribute("data-toggle") === "open";
    document.querySelectorAll("details.page[open] details.case").forEach(function (d) { d.open = open; });
  });
})();
