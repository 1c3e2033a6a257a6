package org.asynctriggers.capture;

import java.util.List;
import java.util.Map;
import java.util.Set;

import org.asynctriggers.api.Operation;
import org.asynctriggers.spec.FlowSpecException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The capture index's own options (docs/design.md, "Capture"): what each flow captures, and every refusal's text. */
class CaptureOptionsTest
{
    private static CaptureOptions parse(String flows)
    {
        return CaptureOptions.parse(Map.of("flows", flows));
    }

    private static String refusal(Map<String, String> options)
    {
        return assertThrows(FlowSpecException.class, () -> CaptureOptions.parse(options)).getMessage();
    }

    private static String refusal(String flows)
    {
        return refusal(Map.of("flows", flows));
    }

    @Test
    void shouldReadEachFlowsEventsInOrderOfTheOptions()
    {
        CaptureOptions options = parse("{\"b\": {\"events\": [\"insert\", \"delete\"]}, \"a\": {\"events\": [\"update\"]}}");
        assertEquals(2, options.flows.size());
        CaptureOptions.FlowCapture b = options.flows.get(0), a = options.flows.get(1);
        assertEquals("b", b.name);
        assertEquals("a", a.name);
        assertTrue(b.handles(Operation.INSERT));
        assertTrue(b.handles(Operation.DELETE));
        assertFalse(b.handles(Operation.UPDATE));
        assertEquals(Set.of(Operation.UPDATE), a.events);
    }

    @Test
    void shouldKeepBackupEntriesUnlessTheFlowSaysFalse()
    {
        CaptureOptions options = parse("{\"dflt\": {\"events\": [\"insert\"]}, \"on\": {\"events\": [\"insert\"], \"backup\": true},"
                                       + " \"off\": {\"events\": [\"insert\"], \"backup\": false}}");
        assertTrue(options.flows.get(0).backup, "backup is on by default");
        assertTrue(options.flows.get(1).backup);
        assertFalse(options.flows.get(2).backup);
        assertTrue(options.anyBackup());
        assertFalse(parse("{\"off\": {\"events\": [\"insert\"], \"backup\": false}}").anyBackup());
    }

    @Test
    void shouldCarryEveryColumnWhenAFlowListsNone()
    {
        assertNull(parse("{\"f\": {\"events\": [\"insert\"]}}").flows.get(0).columns, "no 'columns': every column (a Java handler's flow)");
    }

    @Test
    void shouldCarryOnlyTheColumnsAFlowLists()
    {
        CaptureOptions.FlowCapture flow = parse("{\"f\": {\"events\": [\"insert\"], \"columns\": [\"name\", \"email\", \"name\"]}}").flows.get(0);
        assertEquals(Set.of("name", "email"), flow.columns);
        assertEquals(Set.of(), parse("{\"f\": {\"events\": [\"insert\"], \"columns\": []}}").flows.get(0).columns,
                     "an empty list is no column besides the key, not every column");
    }

    @Test
    void shouldAcceptAFlowHandlingNoEventAndAnIndexWithNoFlow()
    {
        CaptureOptions.FlowCapture idle = parse("{\"f\": {\"events\": []}}").flows.get(0);
        for (Operation op : Operation.values())
            assertFalse(idle.handles(op));
        assertEquals(List.of(), parse("{}").flows);
        assertEquals(List.of(), CaptureOptions.NONE.flows);
    }

    @Test
    void shouldAcceptTheOptionsCassandraAddsToACustomIndex()
    {
        CaptureOptions options = CaptureOptions.parse(Map.of("class_name", "org.asynctriggers.CaptureIndex", "target", "",
                                                             "flows", "{\"f\": {\"events\": [\"delete\"]}}"));
        assertEquals("f", options.flows.get(0).name);
    }

    @Test
    void shouldRefuseAnUnknownOption()
    {
        assertEquals("capture index: unknown option 'flow' (known: 'flows')",
                     refusal(Map.of("flow", "{}", "flows", "{}")));
    }

    @Test
    void shouldRefuseOptionsWithoutFlows()
    {
        assertEquals("capture index: option 'flows' is missing", refusal(Map.of()));
        assertEquals("capture index: option 'flows' is missing", refusal(Map.of("class_name", "org.asynctriggers.CaptureIndex")));
    }

    @Test
    void shouldRefuseFlowsThatAreNotJson()
    {
        assertEquals("capture index: option 'flows' is not valid JSON: Unexpected character ('f' (code 102)): "
                     + "was expecting double-quote to start field name",
                     refusal("{f: 1}"));
    }

    @Test
    void shouldRefuseFlowsThatAreNotAnObject()
    {
        assertEquals("capture index: option 'flows' must be a JSON object of flow name to capture, found: [\"f\"]", refusal("[\"f\"]"));
        assertEquals("capture index: option 'flows' must be a JSON object of flow name to capture, found: ", refusal(""));
    }

    @Test
    void shouldRefuseAFlowThatIsNotAnObject()
    {
        assertEquals("capture index: flow 'f': must be an object with 'events', 'backup' and 'columns', found: [\"insert\"]",
                     refusal("{\"f\": [\"insert\"]}"));
    }

    @Test
    void shouldRefuseEventsThatAreNotAList()
    {
        assertEquals("capture index: flow 'f': 'events' must be a list, found: \"insert\"", refusal("{\"f\": {\"events\": \"insert\"}}"));
        assertEquals("capture index: flow 'f': 'events' must be a list, found: null", refusal("{\"f\": {\"backup\": true}}"));
    }

    @Test
    void shouldRefuseAnUnknownEvent()
    {
        assertEquals("capture index: flow 'f': unknown event \"upsert\" (known: insert, update, delete)",
                     refusal("{\"f\": {\"events\": [\"insert\", \"upsert\"]}}"));
        assertEquals("capture index: flow 'f': unknown event \"INSERT\" (known: insert, update, delete)",
                     refusal("{\"f\": {\"events\": [\"INSERT\"]}}"));
        assertEquals("capture index: flow 'f': unknown event 1 (known: insert, update, delete)", refusal("{\"f\": {\"events\": [1]}}"));
    }

    @Test
    void shouldRefuseABackupThatIsNotABoolean()
    {
        assertEquals("capture index: flow 'f': 'backup' must be true or false, found: \"true\"",
                     refusal("{\"f\": {\"events\": [\"insert\"], \"backup\": \"true\"}}"));
    }

    @Test
    void shouldRefuseColumnsThatAreNotAList()
    {
        assertEquals("capture index: flow 'f': 'columns' must be a list of column names, found: \"name\"",
                     refusal("{\"f\": {\"events\": [\"insert\"], \"columns\": \"name\"}}"));
    }

    @Test
    void shouldRefuseColumnsThatAreNotNames()
    {
        assertEquals("capture index: flow 'f': 'columns' must be a list of column names, found: 3",
                     refusal("{\"f\": {\"events\": [\"insert\"], \"columns\": [\"name\", 3]}}"));
    }

    @Test
    void shouldNameTheFlowAtFaultAmongSeveral()
    {
        assertEquals("capture index: flow 'bad': 'backup' must be true or false, found: 1",
                     refusal("{\"good\": {\"events\": [\"insert\"]}, \"bad\": {\"events\": [\"insert\"], \"backup\": 1}}"));
    }
}
