// nbagent ChatWidget front end: an anywidget ES module, shipped as is (no build step).
//
// It draws what the Python object holds (turns, the live turn, status, approvals)
// and turns keys and clicks into one message each ({kind: "submit", text}), which
// the Python side answers by calling its public method of the same name. Turn HTML
// comes from nbagent's renderer, which escapes everything a model or tool wrote,
// so it is set as markup here.

function element(tag, className, attributes = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function button(label, className, title) {
  const node = element("button", `nbagent-button ${className}`, { type: "button" });
  node.textContent = label;
  if (title) node.title = title;
  return node;
}

function render({ model, el }) {
  // JupyterLab's shortcuts (Shift+Enter runs the cell, Esc leaves edit mode) must not
  // fire for keys typed in the chat: Lumino skips elements marked like this.
  const root = element("div", "nbagent-chat", { "data-lm-suppress-shortcuts": "true" });
  const header = element("div", "nbagent-chat-header");
  const status = element("div", "nbagent-chat-status", { role: "status" });
  const newChat = button("New chat", "nbagent-chat-new", "Start over");
  // Recent conversations from the history store, read when the list is opened.
  const recent = element("select", "nbagent-chat-recent", { "aria-label": "Recent chats" });
  header.append(status, recent, newChat);
  // Controls: the model (the agent's or any model string), the limits of the next
  // turns, and what the conversation has cost so far.
  const controls = element("div", "nbagent-chat-controls", { role: "group", "aria-label": "Run settings" });
  const modelBox = element("input", "nbagent-chat-model", { type: "text", "aria-label": "Model", size: "24" });
  const roundsBox = element("input", "nbagent-chat-max-rounds", { type: "number", min: "0", "aria-label": "Max rounds" });
  const costBox = element("input", "nbagent-chat-max-cost", {
    type: "number", min: "0", step: "0.01", placeholder: "no cap", "aria-label": "Max cost (USD)",
  });
  const totals = element("span", "nbagent-chat-totals", { "aria-label": "Conversation totals" });
  function labelled(text, input) {
    const label = element("label", "nbagent-chat-control");
    label.append(text, input);
    return label;
  }
  controls.append(labelled("Model ", modelBox), labelled("Max rounds ", roundsBox), labelled("Max $ ", costBox), totals);

  // The transcript is a log: screen readers hear new turns; the streamed turn has
  // its own polite live region, marked busy while it streams.
  const scroller = element("div", "nbagent-chat-scroller");
  const log = element("div", "nbagent-chat-transcript", {
    role: "log",
    "aria-label": "Chat transcript",
    "aria-live": "off",
  });
  const liveRegion = element("div", "nbagent-chat-live", {
    "aria-live": "polite",
    "aria-atomic": "false",
  });
  // A column-reverse scroller starts at its bottom and stays there as turns grow (the
  // browser anchors it), unless the reader has scrolled up.
  const column = element("div", "nbagent-chat-column");
  column.append(log, liveRegion);
  scroller.append(column);

  const approvals = element("div", "nbagent-chat-approvals");
  // Tools this conversation always allows, each with a button to take it back.
  const trusted = element("div", "nbagent-chat-trusted", { "aria-label": "Always allowed tools" });
  const inputRow = element("div", "nbagent-chat-input");
  const area = element("textarea", "nbagent-chat-textarea", {
    rows: "3",
    "aria-label": "Message",
  });
  const buttons = element("div", "nbagent-chat-buttons");
  const send = button("Send", "nbagent-chat-send nbagent-primary", "Send (Enter)");
  const stop = button("Stop", "nbagent-chat-stop", "Stop the reply (Esc)");
  const regenerate = button("Regenerate", "nbagent-chat-regenerate", "Answer the last message again, as a new branch");
  const explain = button("Explain last error", "nbagent-chat-explain", "Ask about the kernel's last error");
  buttons.append(send, stop, regenerate, explain);
  inputRow.append(area, buttons);
  // @name completions: kernel variables and tools, from the kernel (no user code runs).
  const mentionList = element("ul", "nbagent-chat-suggestions", { role: "listbox", "aria-label": "Mentions" });
  mentionList.hidden = true;
  let mentionIndex = 0;
  // While an earlier message is being edited: which one, and how to give up.
  const editing = element("div", "nbagent-chat-editing", { role: "status" });
  editing.hidden = true;
  // Images pasted or dropped for the next message, each with a × to take it back.
  const attached = element("div", "nbagent-chat-attachments", { "aria-label": "Attached images" });
  root.append(header, controls, scroller, approvals, trusted, editing, mentionList, attached, inputRow);
  el.append(root);

  const drawn = []; // each finished turn as drawn (HTML and branch), to redraw only changes
  let editTurn = null; // the turn whose message the box holds for editing, if any

  function drawnKey(turn) {
    return `${turn.html}\u0000${turn.branch ? turn.branch.label : ""}`;
  }

  function startEdit(index, prompt) {
    editTurn = index;
    area.value = prompt;
    editing.hidden = false;
    editing.textContent = `Editing message ${index + 1}: Enter sends it as a new branch, Esc cancels.`;
    area.focus();
    area.setSelectionRange(prompt.length, prompt.length);
  }

  function cancelEdit() {
    editTurn = null;
    editing.hidden = true;
    editing.textContent = "";
  }

  function turnControls(turn, index) {
    // Edit (any message) and, where the message was edited before, the branch arrows.
    const bar = element("div", "nbagent-turn-controls", { role: "toolbar", "aria-label": `Message ${index + 1} actions` });
    if (turn.branch) {
      const previous = button("‹", "nbagent-branch-previous", "Previous branch");
      const label = element("span", "nbagent-branch-label", { "aria-label": `Branch ${turn.branch.label}` });
      label.textContent = turn.branch.label;
      const next = button("›", "nbagent-branch-next", "Next branch");
      previous.addEventListener("click", () => model.send({ kind: "branch", turn: index, step: -1 }));
      next.addEventListener("click", () => model.send({ kind: "branch", turn: index, step: 1 }));
      bar.append(previous, label, next);
    }
    const edit = button("Edit", "nbagent-turn-edit", "Edit this message and send it as a new branch");
    edit.addEventListener("click", () => startEdit(index, turn.prompt));
    bar.append(edit);
    return bar;
  }

  function turnNode(turn, index) {
    const node = element("div", "nbagent-turn-view", {
      role: "article",
      "aria-label": `Turn ${index + 1}`,
    });
    node.innerHTML = turn.html;
    node.prepend(turnControls(turn, index));
    addCodeButtons(node);
    return node;
  }

  function addCodeButtons(node) {
    // Copy and Insert as new cell for each code block of an answer. The cell gets the
    // block's text exactly (textContent: the highlighting spans add none) and is not
    // run; the kernel asks the notebook to add it (or says why it cannot).
    for (const pre of node.querySelectorAll(".nba-answer pre")) {
      const copy = button("Copy", "nbagent-code-copy", "Copy this code");
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(pre.innerText);
          copy.textContent = "Copied";
        } catch (error) {
          copy.textContent = "Copy failed";
        }
      });
      const insert = button("Insert as cell", "nbagent-code-insert", "Insert this code in a new cell below (not run)");
      insert.addEventListener("click", () => {
        model.send({ kind: "insert_cell", code: pre.textContent.replace(/\n$/, "") });
      });
      const bar = element("div", "nbagent-code-actions");
      bar.append(copy, insert);
      pre.before(bar);
    }
  }

  function mentionAtCursor() {
    const before = area.value.slice(0, area.selectionStart);
    const match = /(?:^|[^\w@.])@([A-Za-z_]\w*)?$/.exec(before);
    return match ? { prefix: match[1] || "", end: area.selectionStart } : null;
  }

  function currentSuggestions() {
    // The kernel answers each keystroke; keep only what matches the name typed so far.
    const mention = mentionAtCursor();
    if (!mention) return [];
    const typed = mention.prefix.toLowerCase();
    return (model.get("suggestions") || []).filter((item) => item.name.toLowerCase().startsWith(typed));
  }

  function drawSuggestions() {
    const items = currentSuggestions();
    const mention = mentionAtCursor();
    mentionList.replaceChildren();
    mentionList.hidden = !(items.length && mention);
    if (mentionList.hidden) return;
    mentionIndex = Math.min(mentionIndex, items.length - 1);
    items.forEach((item, i) => {
      const option = element("li", "nbagent-chat-suggestion", {
        role: "option",
        "aria-selected": String(i === mentionIndex),
        "data-name": item.name,
      });
      option.textContent = `@${item.name}  ${item.detail}${item.kind === "figure" ? " (attach as image)" : ""}`;
      option.addEventListener("mousedown", (event) => {
        event.preventDefault();
        chooseMention(item);
      });
      mentionList.append(option);
    });
  }

  function chooseMention(item) {
    const mention = mentionAtCursor();
    if (!mention) return;
    const start = mention.end - mention.prefix.length;
    if (item.kind === "figure") {
      // A figure goes as an image: the kernel draws it now and shows it as a chip.
      area.setRangeText("", start - 1, mention.end, "end");
      model.send({ kind: "attach_figure", name: item.name });
    } else {
      area.setRangeText(`${item.name} `, start, mention.end, "end");
    }
    mentionList.hidden = true;
    area.focus();
  }

  const MAX_IMAGE_BYTES = 10 * 1024 * 1024; // the kernel refuses bigger ones too

  async function attachFiles(files) {
    for (const file of files) {
      if (!["image/png", "image/jpeg"].includes(file.type)) continue;
      if (file.size > MAX_IMAGE_BYTES) {
        status.textContent = `Image not attached: ${file.size} bytes is over ${MAX_IMAGE_BYTES}`;
        continue;
      }
      const data = await file.arrayBuffer();
      model.send({ kind: "attach_image" }, undefined, [data]);
    }
  }

  function imageFiles(transfer) {
    if (!transfer) return [];
    return [...(transfer.files || [])].filter((file) => file.type.startsWith("image/"));
  }

  function drawAttachments() {
    attached.replaceChildren();
    (model.get("attachments") || []).forEach((item, index) => {
      const chip = button(`${item.label} ×`, "nbagent-chat-attachment", "Remove this image");
      if (item.thumb) {
        const thumb = element("img", "nbagent-chat-thumb", { src: item.thumb, alt: "" });
        chip.prepend(thumb);
      }
      chip.addEventListener("click", () => model.send({ kind: "remove_attachment", index }));
      attached.append(chip);
    });
  }

  function onInput() {
    const mention = mentionAtCursor();
    if (mention) {
      mentionIndex = 0;
      drawSuggestions();
      model.send({ kind: "complete", prefix: mention.prefix });
    } else {
      mentionList.hidden = true;
    }
  }

  function drawTurns() {
    const turns = model.get("turns") || [];
    // Finished turns never change, so a new list is the old one plus some: append.
    // Anything else (New chat, another state) redraws from scratch.
    const same = drawn.length <= turns.length && drawn.every((key, i) => drawnKey(turns[i]) === key);
    if (!same) {
      log.replaceChildren();
      drawn.length = 0;
    }
    const fragment = document.createDocumentFragment();
    for (let i = drawn.length; i < turns.length; i += 1) {
      fragment.append(turnNode(turns[i], i));
      drawn.push(drawnKey(turns[i]));
    }
    log.append(fragment);
  }

  let liveDrawnAt = performance.now();

  function drawLive() {
    const live = model.get("live") || {};
    liveRegion.innerHTML = live.html || "";
    liveRegion.setAttribute("aria-busy", live.html ? "true" : "false");
    liveDrawnAt = performance.now();
  }

  // A running call's card counts its seconds on between the kernel's redraws.
  function tickCards() {
    const since = (performance.now() - liveDrawnAt) / 1000;
    for (const time of liveRegion.querySelectorAll(".nbagent-card-running [data-elapsed]")) {
      const seconds = Number(time.dataset.elapsed) + since;
      time.textContent = seconds >= 0.1 ? `${seconds.toFixed(1)} s` : `${Math.round(seconds * 1000)} ms`;
    }
  }
  const ticker = setInterval(tickCards, 500);

  function drawStatus() {
    status.textContent = model.get("status");
    const busy = model.get("busy");
    send.disabled = busy;
    stop.disabled = !busy;
    regenerate.disabled = busy || !(model.get("turns") || []).length;
    explain.disabled = busy;
    root.classList.toggle("nbagent-busy", busy);
  }

  function drawApprovals() {
    approvals.replaceChildren();
    for (const call of model.get("approvals") || []) {
      const row = element("div", "nbagent-chat-approval", {
        role: "group",
        "aria-label": `Approval for ${call.tool}`,
      });
      if (call.code_html) {
        const code = element("div", "nbagent-chat-approval-code");
        code.innerHTML = call.code_html; // escaped and highlighted by nbagent
        row.append(code);
      }
      const line = element("div", "nbagent-chat-approval-line");
      const question = element("span", "nbagent-chat-question");
      question.textContent = call.question;
      line.append(question);
      const choices = [
        ["Approve", "approve", "nbagent-chat-approve nbagent-primary"],
        ["Allow for this run", "allow_for_run", "nbagent-chat-allow-run"],
        ["Always allow this tool", "always_allow", "nbagent-chat-always"],
        ["Deny", "deny", "nbagent-chat-deny nbagent-danger"],
      ];
      for (const [label, kind, className] of choices) {
        const choice = button(label, className);
        choice.addEventListener("click", () => model.send({ kind, id: call.id }));
        line.append(choice);
      }
      row.append(line);
      approvals.append(row);
    }
  }

  function drawRecent() {
    const shown = model.get("conversation_id");
    const first = element("option", "", { value: "" });
    first.textContent = "Recent chats…";
    const options = [first];
    for (const row of model.get("recent") || []) {
      const option = element("option", "", { value: row.id });
      option.textContent = `${row.title} (${row.updated.slice(0, 16)})`;
      option.selected = row.id === shown;
      options.push(option);
    }
    recent.replaceChildren(...options);
  }

  function drawTrusted() {
    trusted.replaceChildren();
    const names = model.get("always_allowed") || [];
    if (!names.length) return;
    const label = element("span", "nbagent-chat-trusted-label");
    label.textContent = "Always allowed:";
    trusted.append(label);
    for (const name of names) {
      const chip = button(`${name} ×`, "nbagent-chat-revoke", `Ask again before ${name} runs`);
      chip.dataset.tool = name;
      chip.addEventListener("click", () => model.send({ kind: "revoke", tool: name }));
      trusted.append(chip);
    }
  }

  function drawControls() {
    if (document.activeElement !== modelBox) modelBox.value = model.get("model_name") || "";
    const limits = model.get("limits") || {};
    if (document.activeElement !== roundsBox) roundsBox.value = limits.max_rounds ?? "";
    if (document.activeElement !== costBox) costBox.value = limits.max_cost ?? "";
    const sum = model.get("totals") || {};
    totals.textContent = sum.tokens ? `This chat: ${sum.tokens.toLocaleString()} tokens · cost ${sum.cost}` : "";
  }

  function drawPlaceholder() {
    const enter = model.get("send_on") === "enter";
    root.classList.toggle("nbagent-send-enter", enter);
    root.classList.toggle("nbagent-send-shift-enter", !enter);
    area.placeholder = enter
      ? "Message (Enter to send, Shift+Enter for a new line, Esc to stop)"
      : "Message (Shift+Enter to send, Enter for a new line, Esc to stop)";
    scroller.style.maxHeight = model.get("height");
  }

  function submit() {
    const text = area.value;
    if (!text.trim() || model.get("busy")) return;
    area.value = "";
    if (editTurn !== null) {
      model.send({ kind: "edit", turn: editTurn, text });
      cancelEdit();
    } else {
      model.send({ kind: "submit", text });
    }
  }

  function lastPrompt() {
    const live = model.get("live") || {};
    if (live.prompt) return live.prompt;
    const turns = model.get("turns") || [];
    return turns.length ? turns[turns.length - 1].prompt : "";
  }

  function onKey(event) {
    if (event.isComposing) return;
    if (!mentionList.hidden) {
      const items = currentSuggestions();
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        mentionIndex = (mentionIndex + step + items.length) % items.length;
        drawSuggestions();
        return;
      }
      if ((event.key === "Tab" || event.key === "Enter") && items[mentionIndex]) {
        event.preventDefault();
        event.stopPropagation();
        chooseMention(items[mentionIndex]);
        return;
      }
      if (event.key === "Escape") {
        event.stopPropagation();
        mentionList.hidden = true;
        return;
      }
    }
    if (event.key === "Escape") {
      // Esc stops the run; the notebook does not take it (it would leave edit mode).
      event.stopPropagation();
      if (model.get("busy")) {
        event.preventDefault();
        model.send({ kind: "stop" });
      } else if (editTurn !== null) {
        event.preventDefault();
        cancelEdit();
        area.value = "";
      }
      return;
    }
    if (event.key === "ArrowUp" && area.value === "" && !event.shiftKey) {
      const prompt = lastPrompt();
      if (prompt) {
        event.preventDefault();
        area.value = prompt;
        area.setSelectionRange(prompt.length, prompt.length);
      }
      return;
    }
    if (event.key !== "Enter" || event.altKey) return;
    // The notebook must not see Enter keys typed here (Shift+Enter would run the cell).
    event.stopPropagation();
    const shiftSends = model.get("send_on") === "shift-enter";
    const sends = (shiftSends ? event.shiftKey : !event.shiftKey) || event.ctrlKey || event.metaKey;
    if (!sends) {
      // Insert the newline ourselves: the notebook's own handlers cancel the default
      // of some Enter keys (Shift+Enter) before the textarea would see it.
      event.preventDefault();
      area.setRangeText("\n", area.selectionStart, area.selectionEnd, "end");
      area.dispatchEvent(new Event("input", { bubbles: true }));
      return;
    }
    event.preventDefault();
    submit();
  }

  function onMessage(message) {
    if (message && message.kind === "restore" && area.value === "") area.value = message.text;
  }

  area.addEventListener("keydown", onKey);
  // "Put in variable" on a DataFrame card (the cards come from the kernel as markup).
  scroller.addEventListener("click", (event) => {
    const put = event.target.closest(".nbagent-card-put");
    if (!put) return;
    const name = window.prompt("Variable name for this DataFrame:", "result_df");
    if (name) model.send({ kind: "put_variable", id: put.dataset.callId, name });
  });
  modelBox.addEventListener("change", () => {
    if (modelBox.value.trim()) model.send({ kind: "model", model: modelBox.value.trim() });
  });
  roundsBox.addEventListener("change", () => model.send({ kind: "limits", limits: { max_rounds: roundsBox.value } }));
  costBox.addEventListener("change", () => model.send({ kind: "limits", limits: { max_cost: costBox.value } }));
  for (const box of [modelBox, roundsBox, costBox]) {
    // Keys typed here are the chat's, not the notebook's (Enter, Esc, digits).
    box.addEventListener("keydown", (event) => event.stopPropagation());
  }
  area.addEventListener("input", onInput);
  area.addEventListener("paste", (event) => {
    const files = imageFiles(event.clipboardData);
    if (!files.length) return; // text pastes as usual
    event.preventDefault();
    attachFiles(files);
  });
  root.addEventListener("dragover", (event) => {
    if (imageFiles(event.dataTransfer).length || [...(event.dataTransfer?.types || [])].includes("Files")) {
      event.preventDefault();
    }
  });
  root.addEventListener("drop", (event) => {
    const files = imageFiles(event.dataTransfer);
    if (!files.length) return;
    event.preventDefault();
    event.stopPropagation(); // the notebook must not open the file
    attachFiles(files);
  });
  root.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && event.target !== area && model.get("busy")) {
      event.stopPropagation();
      model.send({ kind: "stop" });
    }
  });
  send.addEventListener("click", submit);
  stop.addEventListener("click", () => model.send({ kind: "stop" }));
  regenerate.addEventListener("click", () => model.send({ kind: "regenerate" }));
  explain.addEventListener("click", () => model.send({ kind: "explain_error" }));
  newChat.addEventListener("click", () => model.send({ kind: "new_chat" }));
  recent.addEventListener("focus", () => model.send({ kind: "refresh_recent" }));
  recent.addEventListener("change", () => {
    if (recent.value && recent.value !== model.get("conversation_id")) {
      model.send({ kind: "open", id: recent.value });
    }
  });

  model.on("change:turns", drawTurns);
  model.on("change:totals", drawControls);
  model.on("change:limits", drawControls);
  model.on("change:model_name", drawControls);
  model.on("change:attachments", drawAttachments);
  model.on("change:suggestions", drawSuggestions);
  model.on("change:turns", drawStatus);
  model.on("change:live", drawLive);
  model.on("change:status", drawStatus);
  model.on("change:busy", drawStatus);
  model.on("change:approvals", drawApprovals);
  model.on("change:send_on", drawPlaceholder);
  model.on("change:height", drawPlaceholder);
  model.on("msg:custom", onMessage);
  model.on("change:recent", drawRecent);
  model.on("change:always_allowed", drawTrusted);
  model.on("change:conversation_id", drawRecent);

  drawPlaceholder();
  drawRecent();
  drawTrusted();
  drawAttachments();
  drawControls();
  drawTurns();
  drawLive();
  drawStatus();
  drawApprovals();

  return () => {
    clearInterval(ticker);
    model.off("change:turns", drawTurns);
    model.off("change:totals", drawControls);
    model.off("change:limits", drawControls);
    model.off("change:model_name", drawControls);
    model.off("change:attachments", drawAttachments);
    model.off("change:suggestions", drawSuggestions);
    model.off("change:turns", drawStatus);
    model.off("change:live", drawLive);
    model.off("change:status", drawStatus);
    model.off("change:busy", drawStatus);
    model.off("change:approvals", drawApprovals);
    model.off("change:send_on", drawPlaceholder);
    model.off("change:height", drawPlaceholder);
    model.off("msg:custom", onMessage);
    model.off("change:recent", drawRecent);
    model.off("change:always_allowed", drawTrusted);
    model.off("change:conversation_id", drawRecent);
  };
}

export default { render };
