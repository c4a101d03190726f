"""The ALBERT paper's tables (Lan et al., 2019, arXiv 1909.11942) reproduced at this machine's
scale: `python -m albert_tf.paper TABLE [--quick]`. One module per table family."""

TABLES = ("table1", "table2", "table3", "table4", "table5", "sharing")
