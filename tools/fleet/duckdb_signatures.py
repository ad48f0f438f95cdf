"""The fleet signature table with DuckDB: python3 duckdb_signatures.py JSONL_GLOB_OR_FILE [SQL].

Makes the `stalls` view over the JSONL files and runs signatures.sql (or the SQL file given,
such as hang_rates.sql); prints one JSON object per row. Needs `pip install duckdb`.
"""
import json
import pathlib
import sys

import duckdb


def main(source, sql=pathlib.Path(__file__).parent / "signatures.sql"):
    connection = duckdb.connect()
    quoted = source.replace("'", "''")
    connection.execute(
        f"CREATE VIEW stalls AS SELECT * FROM read_json_auto('{quoted}', format = 'newline_delimited')"
    )
    cursor = connection.execute(pathlib.Path(sql).read_text())
    names = [column[0] for column in cursor.description]
    for row in cursor.fetchall():
        print(json.dumps(dict(zip(names, row)), default=str))


if __name__ == "__main__":
    main(*sys.argv[1:3])
