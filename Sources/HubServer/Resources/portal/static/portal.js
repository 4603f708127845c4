// msi-hub portal: the channel → area → subject selects follow each other, the send form shows the chosen
// subject's distribution, level and how many devices it reaches (and the notification text only for Alert subjects), and fields count
// their characters. Everything works without it, less conveniently.
(function () {
  'use strict';

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
      if (!select.value && shown.length === 1 && select.required) { select.value = shown[0].value; }
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
      var desc = document.getElementById('desc-field');
      if (desc) { desc.hidden = distribution !== 'Alert'; }
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
    if (!channel.value && channel.options.length === 2 && channel.required) { channel.value = channel.options[1].value; }
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
    Array.prototype.forEach.call(document.querySelectorAll('[data-counter]'), counter);
  });
}());
