-- The signature table of `stallwatch report`, from `stallwatch export --format jsonl` lines
-- (schema stallwatch.jsonl/1, docs/fleet.md). One query for DuckDB, ClickHouse and Spark SQL:
-- it reads a table or view named `stalls` holding the lines (each engine's runner makes it)
-- and uses only what all three share (window functions for the nearest-rank percentiles, the
-- same definition `stallwatch report` uses). Ordered as the report orders signatures: total
-- stall time, then count, then name.
WITH ranked AS (
    SELECT
        signature,
        category,
        trace_id,
        build,
        host,
        start,
        duration_ns,
        row_number() OVER (PARTITION BY signature ORDER BY duration_ns) AS position,
        count(*) OVER (PARTITION BY signature) AS members
    FROM stalls
    WHERE type = 'stall'
)
SELECT
    signature,
    min(category) AS category,
    count(*) AS stalls,
    count(DISTINCT trace_id) AS traces,
    round(sum(duration_ns) / 1e6, 3) AS total_ms,
    round(min(CASE WHEN position >= 0.50 * members THEN duration_ns END) / 1e6, 3) AS p50_ms,
    round(min(CASE WHEN position >= 0.95 * members THEN duration_ns END) / 1e6, 3) AS p95_ms,
    round(max(duration_ns) / 1e6, 3) AS max_ms,
    min(start) AS first_seen,
    max(start) AS last_seen,
    count(DISTINCT build) AS builds,
    count(DISTINCT host) AS hosts
FROM ranked
GROUP BY signature
ORDER BY sum(duration_ns) DESC, count(*) DESC, signature
LIMIT 10
