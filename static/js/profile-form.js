// Profile form: show only the speculative fields the chosen method takes, offer only the
// methods the target vLLM version accepts, keep field highlighting in step with the live
// preview's messages (which htmx swaps in out-of-band), tell the preview which fields of
// a new profile were touched (only theirs show problems), never save a version on a
// stray Enter, and put the cursor in the field a finding links to.
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

    // A new profile: the preview shows the problems of the fields typed in so far ("*",
    // after a refused save: all of them).
    var touched = document.getElementById("touched");
    function touch(event) {
      var name = event.target && event.target.name;
      if (!touched || !name || touched.value === "*" || name === "comment") return;
      var names = touched.value ? touched.value.split(",") : [];
      if (names.indexOf(name) < 0) names.push(name);
      touched.value = names.join(",");
    }
    form.addEventListener("input", touch, true);
    form.addEventListener("change", touch, true);

    // Every save is a new, immutable version: Enter in a field does not save, it moves to
    // the comment; Enter in the comment (or the button) saves.
    var comment = form.elements.namedItem("comment");
    form.addEventListener("keydown", function (event) {
      var target = event.target;
      if (event.key !== "Enter" || !target || target.tagName !== "INPUT") return;
      if (target === comment || target.type === "submit") return;
      event.preventDefault();
      if (comment) {
        comment.focus();
        var hint = document.getElementById("enter-hint");
        if (hint) hint.hidden = false;
      }
    });

    // A finding's field link: scroll there and put the cursor in the field.
    document.addEventListener("click", function (event) {
      var link = event.target.closest && event.target.closest("a.field-link, #save-refused a");
      if (!link) return;
      var row = document.querySelector(link.getAttribute("href"));
      var input = row && row.querySelector("input, select, textarea");
      if (input) { event.preventDefault(); row.scrollIntoView({block: "center"}); input.focus(); }
    });

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
