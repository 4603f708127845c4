// msi-hub portal: the channel → area → subject selects follow each other, the send form shows the chosen
// subject's distribution, level and how many devices it reaches, shows only the fields of the kind of recipient
// chosen (a subject, a group, persons), the notification text only for an Alert, and fields count their characters.
// Everything works without it, less conveniently.
(function () {
  'use strict';

  // A select the form needs (the send form's, never the sent list's filters) takes its only option by itself.
  function picksSingle(select) {
    return select.required || select.hasAttribute('data-required');
  }

  // The kind of recipient chosen by the send form's `to` radio buttons; a subject when it has none.
  function chosenKind() {
    var chosen = document.querySelector('input[name="to"]:checked');
    return chosen ? chosen.value : 'subject';
  }

  // The notification text is asked for an Alert only: the chosen subject's distribution, or the one chosen for a
  // group or persons.
  function showDesc() {
    var desc = document.getElementById('desc-field');
    if (!desc) { return; }
    var alert = false;
    if (chosenKind() === 'subject') {
      var subject = document.getElementById('subject');
      var chosen = subject && subject.options[subject.selectedIndex];
      alert = !!(chosen && chosen.value && chosen.getAttribute('data-distribution') === 'Alert');
    } else {
      var distribution = document.querySelector('input[name="distribution"]:checked');
      alert = !!(distribution && distribution.value === 'Alert');
    }
    desc.hidden = !alert;
  }

  // Only the fields of the kind of recipient chosen are shown, needed and sent (the server reads only those).
  function recipientKinds(form) {
    var radios = form.querySelectorAll('input[name="to"]');
    if (!radios.length) { return; }
    var sections = Array.prototype.slice.call(form.querySelectorAll('[data-kind]'));
    function update() {
      var kind = chosenKind();
      sections.forEach(function (section) {
        var on = section.getAttribute('data-kind').split(' ').indexOf(kind) >= 0;
        section.hidden = !on;
        Array.prototype.forEach.call(section.querySelectorAll('input, select, textarea'), function (control) {
          control.disabled = !on;
          if (control.hasAttribute('data-required')) { control.required = on; }
        });
      });
      showDesc();
    }
    Array.prototype.forEach.call(radios, function (radio) { radio.addEventListener('change', update); });
    Array.prototype.forEach.call(form.querySelectorAll('input[name="distribution"]'), function (radio) {
      radio.addEventListener('change', showDesc);
    });
    update();
  }

  function cascade(form) {
    var channel = form.querySelector('select[data-cascade="channel"]');
    var area = form.querySelector('select[data-cascade="area"]');
    var subject = form.querySelector('select[data-cascade="subject"]');
    if (!channel || !area || !subject) { return; }
    var areas = Array.prototype.slice.call(area.options, 1);
    var subjects = Array.prototype.slice.call(subject.options, 1);

    // Options not under the chosen parent are hidden and disabled, never removed, so the page keeps its nodes.
    function fill(select, options, matches) {
      var shown = options.filter(function (option) {
        var match = matches(option);
        option.hidden = !match;
        option.disabled = !match;
        return match;
      });
      if (select.selectedOptions.length && select.selectedOptions[0].disabled) { select.value = ''; }
      if (!select.value && shown.length === 1 && picksSingle(select)) { select.value = shown[0].value; }
    }

    function showSubject() {
      var chosen = subject.options[subject.selectedIndex];
      var distribution = chosen && chosen.value ? chosen.getAttribute('data-distribution') : '';
      var level = chosen && chosen.value ? chosen.getAttribute('data-level') : '';
      var reach = chosen && chosen.value ? chosen.getAttribute('data-reach') : '';
      var infoDistribution = document.getElementById('info-distribution');
      var infoLevel = document.getElementById('info-level');
      if (infoDistribution) { infoDistribution.textContent = distribution || 'choose a subject'; }
      if (infoLevel) { infoLevel.textContent = level || '–'; }
      var infoReach = document.getElementById('info-reach');
      if (infoReach) { infoReach.textContent = reach || '–'; }
      showDesc();
    }

    function update() {
      fill(area, areas, function (option) { return option.getAttribute('data-channel') === channel.value; });
      fill(subject, subjects, function (option) {
        return option.getAttribute('data-channel') === channel.value && option.getAttribute('data-area') === area.value;
      });
      showSubject();
    }

    channel.addEventListener('change', update);
    area.addEventListener('change', update);
    subject.addEventListener('change', showSubject);
    if (!channel.value && channel.options.length === 2 && picksSingle(channel)) { channel.value = channel.options[1].value; }
    update();
  }

  function counter(field) {
    var output = document.getElementById(field.getAttribute('data-counter'));
    if (!output) { return; }
    var max = parseInt(output.getAttribute('data-max'), 10);
    function update() {
      var used = Array.from(field.value).length;
      output.textContent = used + ' of ' + max + ' characters';
      output.classList.toggle('over', used > max);
    }
    field.addEventListener('input', update);
    update();
  }

  document.addEventListener('DOMContentLoaded', function () {
    Array.prototype.forEach.call(document.querySelectorAll('form'), cascade);
    Array.prototype.forEach.call(document.querySelectorAll('form'), recipientKinds);
    Array.prototype.forEach.call(document.querySelectorAll('[data-counter]'), counter);
  });
}());
