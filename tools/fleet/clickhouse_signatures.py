"""The fleet signature table with ClickHouse (chDB, in process): python3 clickhouse_signatures.py GLOB.

Makes the `stalls` view over the JSONL files (JSONEachRow) and runs signatures.sql; prints one
JSON object per signature. Needs `pip install chdb`; with a ClickHouse server, create the same
view over `file()`, `s3()` or a table and run signatures.sql as it is.
"""
import json
import pathlib
import sys

from chdb import session

SQL = (pathlib.Path(__file__).parent / "signatures.sql").read_text()


def main(source):
    chs = session.Session()
    path = str(pathlib.Path(source).resolve()).replace("'", "\\'")
    chs.query(f"CREATE VIEW stalls AS SELECT * FROM file('{path}', JSONEachRow)")
    result = chs.query(SQL, "JSONEachRow")
    for line in str(result).splitlines():
        if line.strip():
            print(json.dumps(json.loads(line)))


if __name__ == "__main__":
    main(sys.argv[1])
