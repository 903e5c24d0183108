"""Diagnostics: the value every check produces, the rule registry, renderers."""

from turnflow.diagnostics.diagnostic import Diagnostic, Related, SEVERITIES, sort_key
from turnflow.diagnostics.registry import RuleInfo, all_rules, get_rule, register

__all__ = ["Diagnostic", "Related", "SEVERITIES", "sort_key", "RuleInfo", "all_rules", "get_rule", "register"]
