// Entry point for the ZeptoDB web-console vendor bundle.
//
// Bundled by ./build.sh (esbuild, IIFE) into ../vendor.js, which the server
// embeds with include_bytes!. Everything the console needs from third-party
// code is exposed on ONE global object, `window.ZV`; the console's own
// scripts use only that. All CodeMirror packages must share a single copy of
// @codemirror/state — `npm ls @codemirror/state` should show it deduped.
//
// To add a name: import it here, add it to ZV, run ./build.sh, commit the
// regenerated ../vendor.js.

import {
  EditorState, EditorSelection, Compartment, StateEffect, StateField,
  Prec, Transaction, Annotation, Facet, Text,
} from "@codemirror/state";
import {
  EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter,
  drawSelection, dropCursor, placeholder, Decoration, ViewPlugin, WidgetType,
  highlightSpecialChars, rectangularSelection, crosshairCursor, tooltips, showPanel,
} from "@codemirror/view";
import {
  defaultKeymap, history, historyKeymap, indentWithTab, undo, redo, selectAll, toggleComment,
} from "@codemirror/commands";
import {
  syntaxHighlighting, defaultHighlightStyle, HighlightStyle, bracketMatching, indentOnInput,
  indentUnit, foldGutter, foldKeymap, syntaxTree,
} from "@codemirror/language";
import {
  autocompletion, completionKeymap, closeBrackets, closeBracketsKeymap,
  startCompletion, acceptCompletion, completeFromList, snippetCompletion, ifNotIn,
} from "@codemirror/autocomplete";
import {
  sql, StandardSQL, PostgreSQL, MySQL, SQLite, SQLDialect,
  keywordCompletionSource, schemaCompletionSource,
} from "@codemirror/lang-sql";
import {
  searchKeymap, highlightSelectionMatches, search, openSearchPanel,
} from "@codemirror/search";
import {
  linter, setDiagnostics, lintGutter, lintKeymap, forceLinting, diagnosticCount,
} from "@codemirror/lint";
import { oneDark, oneDarkTheme, oneDarkHighlightStyle } from "@codemirror/theme-one-dark";
import { tags } from "@lezer/highlight";
import uPlot from "uplot";

window.ZV = {
  // @codemirror/state
  EditorState, EditorSelection, Compartment, StateEffect, StateField,
  Prec, Transaction, Annotation, Facet, Text,
  // @codemirror/view
  EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter,
  drawSelection, dropCursor, placeholder, Decoration, ViewPlugin, WidgetType,
  highlightSpecialChars, rectangularSelection, crosshairCursor, tooltips, showPanel,
  // @codemirror/commands
  defaultKeymap, history, historyKeymap, indentWithTab, undo, redo, selectAll, toggleComment,
  // @codemirror/language
  syntaxHighlighting, defaultHighlightStyle, HighlightStyle, bracketMatching, indentOnInput,
  indentUnit, foldGutter, foldKeymap, syntaxTree,
  // @codemirror/autocomplete
  autocompletion, completionKeymap, closeBrackets, closeBracketsKeymap,
  startCompletion, acceptCompletion, completeFromList, snippetCompletion, ifNotIn,
  // @codemirror/lang-sql
  sql, StandardSQL, PostgreSQL, MySQL, SQLite, SQLDialect,
  keywordCompletionSource, schemaCompletionSource,
  // @codemirror/search
  searchKeymap, highlightSelectionMatches, search, openSearchPanel,
  // @codemirror/lint
  linter, setDiagnostics, lintGutter, lintKeymap, forceLinting, diagnosticCount,
  // @codemirror/theme-one-dark
  oneDark, oneDarkTheme, oneDarkHighlightStyle,
  // @lezer/highlight
  tags,
  // uplot (default export; CSS is shipped separately as ../vendor.css)
  uPlot,
};
