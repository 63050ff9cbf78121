"""sabench: measure semantic drift between ML papers and the code agents write to reproduce them."""

__version__ = "0.1.0"

#: Version of the Parquet/JSON data contracts; stored in every table's metadata.
SCHEMA_VERSION = "4"
