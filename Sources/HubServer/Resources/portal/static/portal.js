// msi-hub portal: the channel → area → subject selects follow each other, the send form shows the chosen
// subject's distribution, level and how many devices it reaches, shows only the fields of the kind of recipient
// chosen (a subject, a group, persons), the notification text only for an Alert, and fields count their characters;
// translations and data keys are rows added and removed with buttons, and the bytes left in the push are counted.
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

  // Whether the message being written is an Alert: the chosen subject's distribution, or the one chosen for a group
  // or persons.
  function isAlert() {
    if (chosenKind() === 'subject') {
      var subject = document.getElementById('subject');
      var chosen = subject && subject.options[subject.selectedIndex];
      return !!(chosen && chosen.value && chosen.getAttribute('data-distribution') === 'Alert');
    }
    var distribution = document.querySelector('input[name="distribution"]:checked');
    return !!(distribution && distribution.value === 'Alert');
  }

  // The notification text (and each translation's) is asked for an Alert only.
  function showDesc() {
    var desc = document.getElementById('desc-field');
    if (!desc) { return; }
    var alert = isAlert();
    desc.hidden = !alert;
    Array.prototype.forEach.call(document.querySelectorAll('[data-alert-only]'), function (field) {
      field.hidden = !alert;
    });
    updatePayload();
  }

  // The values of the fields named `name` in `form`, in order.
  function values(form, name) {
    return Array.prototype.map.call(form.querySelectorAll('[name="' + name + '"]'), function (field) {
      return field.value.trim();
    });
  }

  // An approximation of the data payload the hub sends for this form, as FCM's mapping measures it: the UTF-8 bytes
  // of the compact JSON of the data object (the sender's data, then the hub's keys: key, topic, texts, urgency,
  // acknowledgement, languages and translations, poster, kind, expiry). Shown as the bytes left to the limit.
  function updatePayload() {
    var output = document.getElementById('payload-count');
    var form = document.getElementById('send-form');
    if (!output || !form || !window.TextEncoder) { return; }
    var limit = parseInt(output.getAttribute('data-limit'), 10);
    var alert = isAlert();
    var data = {};
    var keys = values(form, 'data_key'), dataValues = values(form, 'data_value');
    keys.forEach(function (key, index) { if (key) { data[key] = dataValues[index] || ''; } });
    data.msi_key = '000000000000000000000000';
    var kind = chosenKind();
    if (kind === 'subject') {
      var subject = document.getElementById('subject');
      var chosen = subject && subject.options[subject.selectedIndex];
      data.topic_key = (chosen && chosen.getAttribute('data-topic')) || '';
    } else {
      data.audience = kind === 'group' ? 'group' : 'person';
      var group = document.getElementById('group');
      if (kind === 'group' && group) { data.group = group.value; }
    }
    data.dist = alert ? 'Alert' : 'Information';
    var field = function (id) {
      var element = document.getElementById(id);
      return element ? element.value.trim() : '';
    };
    data.title = field('title');
    data.desc = alert ? field('desc') : '';
    data.message = field('message');
    data.timestamp = '0000000000000';
    data.urgency = field('urgency') || 'active';
    var ack = document.getElementById('ack');
    if (ack && ack.checked) {
      data.ack = '1';
      data.ack_responses = JSON.stringify(field('ack-responses').split('\n').map(function (line) {
        return line.trim();
      }).filter(function (line) { return line; }));
    }
    var languages = values(form, 'tr_lang'), titles = values(form, 'tr_title'), descs = values(form, 'tr_desc'),
        messages = values(form, 'tr_message');
    var translations = {}, translated = false;
    languages.forEach(function (language, index) {
      if (!language && !titles[index] && !descs[index] && !messages[index]) { return; }
      translations[language.toLowerCase()] = { title: titles[index] || '', desc: alert ? descs[index] || '' : '',
                                               message: messages[index] || '' };
      translated = true;
    });
    if (field('lang') || translated) { data.lang = field('lang').toLowerCase() || 'en'; }
    if (field('image')) { data.image = field('image'); }
    var kindChoice = field('kind');
    if (kindChoice === 'own') {
      data.kind = field('kind-own');
    } else if (kindChoice && kindChoice !== 'general') {
      data.kind = kindChoice;
    }
    var dismissible = document.getElementById('dismissible');
    if (dismissible && !dismissible.checked) { data.dismissible = 'false'; }
    var display = document.getElementById('display');
    if (display && !display.checked) { data.display = 'false'; }
    if (field('expires-local')) { data.expires_at = '0000000000000'; }
    if (translated) { data.translations = JSON.stringify(translations); }
    var left = limit - new TextEncoder().encode(JSON.stringify(data)).length;
    output.setAttribute('data-left', String(left));
    output.textContent = left >= 0 ? left + ' bytes left in the push'
      : (-left) + ' bytes over the push\'s ' + limit + ': the text will be cut and the phone fetches it from the hub';
    output.classList.toggle('over', left < 0);
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

  // Rows the person adds and removes (translations, data keys): the add button clones the first row, emptied; a
  // remove button takes its row away (the last one is emptied instead, so the form keeps one to fill).
  function rows(container, addButton, max) {
    if (!container || !addButton) { return; }
    function emptied(row) {
      Array.prototype.forEach.call(row.querySelectorAll('input, textarea'), function (field) { field.value = ''; });
      return row;
    }
    function wire(row) {
      var remove = row.querySelector('[data-remove-row]');
      if (!remove) { return; }
      remove.hidden = false;
      remove.addEventListener('click', function () {
        if (container.children.length > 1) { container.removeChild(row); } else { emptied(row); }
        addButton.disabled = false;
        updatePayload();
      });
    }
    Array.prototype.forEach.call(container.children, wire);
    addButton.hidden = false;
    addButton.addEventListener('click', function () {
      if (max && container.children.length >= max) { return; }
      var row = emptied(container.children[0].cloneNode(true));
      container.appendChild(row);
      wire(row);
      showDesc();
      addButton.disabled = !!max && container.children.length >= max;
      var first = row.querySelector('input, textarea');
      if (first) { first.focus(); }
    });
  }

  // The rest of the send form: the own kind's field only for "Our own…", the acknowledgement's details only when
  // asked, the expiry sent as RFC 3339 with the browser's offset, and the payload's bytes counted as they change.
  function sendOptions(form) {
    if (form.id !== 'send-form') { return; }
    var translations = document.getElementById('translations');
    rows(document.getElementById('translation-rows'), document.getElementById('add-translation'),
         translations ? parseInt(translations.getAttribute('data-max'), 10) : 0);
    rows(document.getElementById('data-rows'), document.getElementById('add-data'), 0);
    var kind = document.getElementById('kind'), own = document.getElementById('own-kind-field');
    if (kind && own) {
      var showOwn = function () { own.hidden = kind.value !== 'own'; };
      kind.addEventListener('change', showOwn);
      showOwn();
    }
    var ack = document.getElementById('ack'), details = document.getElementById('ack-details');
    if (ack && details) {
      var showAck = function () { details.hidden = !ack.checked; };
      ack.addEventListener('change', showAck);
      showAck();
    }
    var local = document.getElementById('expires-local'), expiresAt = document.getElementById('expires-at');
    if (local && expiresAt) {
      var setExpiry = function () {
        expiresAt.value = '';
        if (!local.value) { return; }
        var date = new Date(local.value);  // a datetime-local value is read in the browser's time zone
        if (isNaN(date.getTime())) { return; }
        var two = function (n) { return (n < 10 ? '0' : '') + n; };
        var offset = -date.getTimezoneOffset();
        var sign = offset >= 0 ? '+' : '-';
        offset = Math.abs(offset);
        expiresAt.value = date.getFullYear() + '-' + two(date.getMonth() + 1) + '-' + two(date.getDate()) + 'T'
          + two(date.getHours()) + ':' + two(date.getMinutes()) + ':' + two(date.getSeconds())
          + sign + two(Math.floor(offset / 60)) + ':' + two(offset % 60);
      };
      local.addEventListener('input', setExpiry);
      local.addEventListener('change', setExpiry);
      form.addEventListener('submit', setExpiry);
      setExpiry();
    }
    form.addEventListener('input', updatePayload);
    form.addEventListener('change', updatePayload);
    updatePayload();
  }

  document.addEventListener('DOMContentLoaded', function () {
    Array.prototype.forEach.call(document.querySelectorAll('form'), cascade);
    Array.prototype.forEach.call(document.querySelectorAll('form'), recipientKinds);
    Array.prototype.forEach.call(document.querySelectorAll('[data-counter]'), counter);
    Array.prototype.forEach.call(document.querySelectorAll('form'), sendOptions);
  });
}());
