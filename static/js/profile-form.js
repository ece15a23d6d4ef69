// Profile form: show only the speculative fields the chosen method takes, offer only the
// methods the target vLLM version accepts, and keep field highlighting in step with the
// live preview's messages (which htmx swaps in out-of-band).
(function () {
  "use strict";

  function init() {
    var form = document.getElementById("profile-form");
    var source = document.getElementById("method-fields");
    if (!form || !source) return;
    var meta = JSON.parse(source.textContent);
    var method = form.elements.namedItem("spec_method");
    var version = form.elements.namedItem("target_vllm_version");

    function showSpecFields() {
      var takes = meta.takes[method.value] || [];
      meta.fields.forEach(function (name) {
        var row = form.querySelector('.field[data-field="' + name + '"]');
        var input = form.elements.namedItem(name);
        if (!row || !input) return;
        var shown = takes.indexOf(name) >= 0;
        row.hidden = !shown;
        input.disabled = !shown; // a hidden field is not sent, so the method never gets it
      });
    }

    function offerMethods() {
      var current = method.value;
      var methods = meta.methods[version.value] || [];
      while (method.options.length > 1) method.remove(1);
      methods.forEach(function (m) { method.add(new Option(m, m)); });
      if (current && methods.indexOf(current) < 0) {
        method.add(new Option(current + " (not in vLLM " + version.value + ")", current));
      }
      method.value = current;
    }

    function markFields() {
      form.querySelectorAll(".field[data-field]").forEach(function (row) {
        var list = row.querySelector("ul.issues");
        row.classList.toggle("has-issues", !!(list && list.children.length));
      });
    }

    method.addEventListener("change", showSpecFields);
    version.addEventListener("change", function () { offerMethods(); showSpecFields(); });
    // htmx's "changed" filter compares values; a checkbox's value never changes, so ask
    // for a preview explicitly when one is toggled.
    form.querySelectorAll('input[type="checkbox"]').forEach(function (box) {
      box.addEventListener("change", function () { htmx.trigger(form, "preview-refresh"); });
    });
    document.body.addEventListener("htmx:afterSettle", markFields);
    showSpecFields();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
