-- Hang rate and hitch ratio per build, as `stallwatch report --json` gives them in
-- `rateByBuild`, over a table or view named `stalls` of stallwatch.jsonl/1 lines. Each trace's
-- run time and hang time are on every one of its lines: taken once per trace, summed per build.
-- A trace without stalls has no lines, so its run time is not counted here.
WITH traces AS (
  SELECT build, trace_id, MAX(trace_run_time_ns) AS run_ns, MAX(trace_hang_ns) AS hang_ns
  FROM stalls
  GROUP BY build, trace_id
)
SELECT
  build AS name,
  COUNT(*) AS traces,
  ROUND(CAST(SUM(hang_ns) AS DOUBLE) / CAST(SUM(run_ns) AS DOUBLE) * 3600, 3) AS hangRateSecondsPerHour
FROM traces
GROUP BY build
ORDER BY hangRateSecondsPerHour DESC, name
