"""The fleet signature table as a Spark job.

    spark-submit spark_signatures.py PATH [OUTPUT]
    python3 spark_signatures.py PATH [OUTPUT]        (pip install pyspark: local mode)

PATH is anything spark.read.json takes: a directory or glob of `stallwatch export --format
jsonl` files, or an object-store prefix (s3a://bucket/stallwatch/2026-12-*/, gs://…). The job
registers the lines as the `stalls` view and runs signatures.sql, the same query DuckDB and
ClickHouse run, so the three agree with `stallwatch report` on the same traces. Prints one JSON
object per signature; with OUTPUT, also writes the table there as JSON.
"""
import json
import pathlib
import sys

from pyspark.sql import SparkSession

SQL = (pathlib.Path(__file__).parent / "signatures.sql").read_text()


def main(source, output=None):
    spark = (
        SparkSession.builder.appName("stallwatch-fleet-signatures")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.read.json(source).createOrReplaceTempView("stalls")
    table = spark.sql(SQL)
    for row in table.collect():
        print(json.dumps(row.asDict(), default=str))
    if output:
        table.write.mode("overwrite").json(output)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
