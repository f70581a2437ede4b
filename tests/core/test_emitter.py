import pytest

from orkestrel.core import Emitter


def test_listeners_receive_arguments_in_order_of_subscription():
    emitter = Emitter()
    seen = []
    emitter.on("x", lambda value: seen.append(("a", value)))
    emitter.on("x", lambda value: seen.append(("b", value)))
    emitter.emit("x", 1)
    assert seen == [("a", 1), ("b", 1)]


def test_unsubscribe_stops_delivery():
    emitter = Emitter()
    seen = []
    off = emitter.on("x", seen.append)
    off()
    emitter.emit("x", 1)
    assert seen == []
    assert not emitter.has("x")


def test_on_option_wires_initial_listeners():
    seen = []
    emitter = Emitter(on={"a": seen.append, "b": [seen.append, seen.append]})
    emitter.emit("a", 1)
    emitter.emit("b", 2)
    assert seen == [1, 2, 2]


def test_throwing_listener_is_routed_to_error_handler_with_event():
    errors = []
    emitter = Emitter(error=lambda error, event: errors.append((str(error), event)))
    seen = []

    def broken(_):
        raise RuntimeError("boom")

    emitter.on("x", broken)
    emitter.on("x", seen.append)
    emitter.emit("x", 7)
    assert errors == [("boom", "x")]
    assert seen == [7]


def test_throwing_error_handler_is_swallowed_without_recursion():
    calls = []

    def handler(error, event):
        calls.append(event)
        raise RuntimeError("handler broke")

    emitter = Emitter(error=handler)
    emitter.on("x", lambda: 1 / 0)
    emitter.emit("x")
    assert calls == ["x"]


def test_listener_errors_without_handler_are_dropped():
    emitter = Emitter()
    emitter.on("x", lambda: 1 / 0)
    emitter.emit("x")


def test_once_fires_a_single_time():
    emitter = Emitter()
    seen = []
    emitter.once("x", seen.append)
    emitter.emit("x", 1)
    emitter.emit("x", 2)
    assert seen == [1]


def test_listener_added_during_emit_waits_for_next_emit():
    emitter = Emitter()
    seen = []

    def first(value):
        emitter.on("x", lambda v: seen.append(("late", v)))

    emitter.on("x", first)
    emitter.emit("x", 1)
    assert seen == []
    emitter.emit("x", 2)
    assert ("late", 2) in seen


def test_non_callable_listener_is_rejected():
    with pytest.raises(TypeError, match="callable"):
        Emitter().on("x", 3)
