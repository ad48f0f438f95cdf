extension HTMLPage {
    /// The page's style sheet: system fonts only, no `url(…)`, no `@import`.
    static let style = #"""
        :root { --fg: #1d2330; --dim: #6b7280; --line: #e3e6eb; --bg: #ffffff; --panel: #f6f7f9;
          --accent: #2563eb; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
          font-size: 14px; color: var(--fg); background: var(--bg); }
        body { margin: 0; padding: 16px 24px 48px; }
        h1 { font-size: 22px; margin: 0 0 6px; }
        h2 { font-size: 16px; margin: 24px 0 8px; }
        .hint { color: var(--dim); font-size: 12px; }
        .traces { color: var(--dim); font-size: 12px; margin-bottom: 10px; }
        .traces div { margin: 1px 0; }
        .traces .problem { color: #b42318; }
        .figures { display: flex; flex-wrap: wrap; gap: 10px; }
        .figure { background: var(--panel); border: 1px solid var(--line); border-radius: 6px;
          padding: 8px 12px; min-width: 120px; }
        .figure .value { font-size: 20px; font-weight: 600; }
        .figure .label { color: var(--dim); font-size: 12px; }
        .figure .sub { color: var(--dim); font-size: 12px; }
        .counts { display: flex; flex-wrap: wrap; gap: 6px 18px; margin-top: 10px; font-size: 13px; }
        .counts .group { display: flex; flex-wrap: wrap; gap: 4px 10px; align-items: center; }
        .counts .name { color: var(--dim); }
        .swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px;
          vertical-align: baseline; }
        .errors { background: #fef3f2; color: #b42318; border: 1px solid #fda29b; padding: 8px; white-space: pre-wrap; }
        .toolbar { display: flex; gap: 8px; align-items: center; margin-bottom: 6px; flex-wrap: wrap; }
        .filters { margin: 10px 0 0; font-size: 13px; }
        .filters[hidden] { display: none; }
        .filters .name { color: var(--dim); }
        select { font: inherit; font-size: 13px; padding: 2px 6px; border: 1px solid #c9ced6; border-radius: 4px;
          background: #fff; }
        button { font: inherit; font-size: 12px; padding: 2px 10px; border: 1px solid #c9ced6; border-radius: 4px;
          background: #fff; cursor: pointer; }
        button:hover { background: var(--panel); }
        input[type=search] { font: inherit; font-size: 13px; padding: 3px 8px; width: 260px;
          border: 1px solid #c9ced6; border-radius: 4px; }
        .canvas-box { border: 1px solid var(--line); border-radius: 6px; overflow: hidden; }
        canvas { display: block; width: 100%; }
        #timeline { cursor: crosshair; }
        #flame { cursor: pointer; }
        .legend { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12px; color: var(--dim); margin-top: 6px; }
        .details { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px;
          min-height: 40px; }
        .details h3 { margin: 0 0 6px; font-size: 15px; }
        .details dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0 0 8px; }
        .details dt { color: var(--dim); }
        .details dd { margin: 0; }
        .bar { display: flex; height: 10px; width: 320px; border-radius: 3px; overflow: hidden; background: var(--line);
          margin-top: 3px; }
        .stack { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; margin: 4px 0 0;
          padding-left: 0; list-style: none; }
        .stack li { padding: 1px 0; white-space: pre-wrap; word-break: break-all; }
        .stack .system { color: #9aa1ac; }
        .stack .source { color: var(--dim); }
        table.data { border-collapse: collapse; width: 100%; font-size: 13px; }
        table.data th { text-align: left; border-bottom: 2px solid var(--line); padding: 4px 8px; cursor: pointer;
          user-select: none; white-space: nowrap; }
        table.data th.sorted-asc::after { content: " \25B2"; font-size: 10px; }
        table.data th.sorted-desc::after { content: " \25BC"; font-size: 10px; }
        table.data td { border-bottom: 1px solid var(--line); padding: 3px 8px; vertical-align: top; }
        table.data td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
        table.data tr.row { cursor: pointer; }
        table.data tr.row:hover { background: #f0f4ff; }
        table.data tr.selected { background: #e0e9ff; }
        table.data td.frames { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px;
          word-break: break-all; }
        table.data tr.expansion td { background: var(--panel); }
        .chips { display: flex; flex-wrap: wrap; gap: 4px; margin-top: 6px; }
        .chip { font-size: 12px; padding: 1px 8px; border-radius: 10px; }
        .more { margin-top: 6px; }
        .tooltip { position: fixed; z-index: 10; max-width: 560px; background: #1d2330; color: #f4f5f7; font-size: 12px;
          padding: 8px 10px; border-radius: 6px; pointer-events: none; box-shadow: 0 4px 14px rgba(0,0,0,.25); }
        .tooltip .title { font-weight: 600; margin-bottom: 3px; }
        .tooltip .stack { color: #d6dae1; }
        .tooltip .stack .system { color: #8b93a1; }
        .tooltip .stack .source { color: #a9b0bc; }

        """#
}
