// The dashboard's one script: while a preview or a release runs (a release
// reads the whole dataset: several seconds), the form shows a spinner and the
// seconds elapsed, and its button is disabled so that it is not sent twice.
// Served from /static (the Content-Security-Policy allows scripts from this
// origin only, never inline ones); the pages work without it.
"use strict";

function showBusy(form) {
  const busy = form.querySelector(".busy");
  const button = form.querySelector("button[type=submit]");
  if (button) {
    button.disabled = true;
  }
  if (!busy) {
    return;
  }
  const text = busy.querySelector(".busy-text");
  const label = text.dataset.label;
  const started = Date.now();
  busy.hidden = false;
  form.classList.add("is-busy");
  const tick = () => {
    const seconds = Math.floor((Date.now() - started) / 1000);
    text.textContent = label + "\u2026 " + seconds + " s";
  };
  tick();
  window.setInterval(tick, 250);
}

// "plan by": typing in the epsilon, target half-width or min-users field
// chooses its radio (the server reads only the chosen field).
function choosePlanBy(fieldset) {
  for (const label of fieldset.querySelectorAll("label")) {
    const radio = label.querySelector("input[type=radio]");
    const field = label.querySelector("input:not([type=radio])");
    if (radio && field) {
      field.addEventListener("input", () => { radio.checked = true; });
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const form of document.querySelectorAll("form[data-busy]")) {
    form.addEventListener("submit", () => showBusy(form));
  }
  for (const fieldset of document.querySelectorAll("fieldset.plan-by")) {
    choosePlanBy(fieldset);
  }
});

// Back from the browser's cache (bfcache): the forms are usable again (never a
// reload: that could post a release twice).
window.addEventListener("pageshow", (event) => {
  if (!event.persisted) {
    return;
  }
  for (const form of document.querySelectorAll("form[data-busy]")) {
    form.classList.remove("is-busy");
    for (const busy of form.querySelectorAll(".busy")) {
      busy.hidden = true;
    }
    for (const button of form.querySelectorAll("button[type=submit]")) {
      button.disabled = false;
    }
  }
});
