"""Dataset metadata without the data, for the config tests: the product's
:mod:`graphgps_ext.loader.shapes` under the names the tests use."""
from graphgps_ext.loader.shapes import sample_graphs as tiny_graphs  # noqa: F401
from graphgps_ext.loader.shapes import spec_of  # noqa: F401
from graphgps_ext.loader.shapes import task_without_data as task_for  # noqa: F401
