package org.asynctriggers;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plugin's packages in layers, read from its sources: a package uses only packages of lower layers, so none
 * of them needs another round a circle and each can be read with what lies beneath it.
 *
 * <pre>
 *   7  (root)               the node's entry points: the agent, the capture index, the trigger, Node
 *   6  flows                a deployed flow's runtime: its queue, workers, backup map and capture wired together
 *   5  capture, work        recording a write's tasks on each replica; running them (workers, takeover, scans)
 *   4  backup, execute,     the replica backup maps; applying a task's writes; the node-local queues
 *      queue
 *   3  task                 a task and its stored forms
 *   2  spec, metrics        the flow specification; JMX metrics
 *   1  api, cql             the handler API; CQL statements and values
 * </pre>
 *
 * A reference is an import or a qualified name {@code org.asynctriggers.<package>.<Class>} outside comments and
 * string literals.
 */
class PackageLayersTest
{
    private static final Path SOURCES = Paths.get("src/main/java/org/asynctriggers");
    private static final List<Set<String>> LAYERS = List.of(
            Set.of("api", "cql"),
            Set.of("spec", "metrics"),
            Set.of("task"),
            Set.of("backup", "execute", "queue"),
            Set.of("capture", "work"),
            Set.of("flows"),
            Set.of("(root)"));
    private static final Pattern REFERENCE = Pattern.compile("org\\.asynctriggers\\.((?:[a-z]\\w*\\.)*)[A-Z]\\w*");
    private static final Pattern COMMENTS_AND_STRINGS =
            Pattern.compile("/\\*.*?\\*/|//[^\\n]*|\"(?:\\\\.|[^\"\\\\])*\"|'(?:\\\\.|[^'\\\\])*'", Pattern.DOTALL);

    static int layer(String pkg)
    {
        for (int i = 0; i < LAYERS.size(); i++)
            if (LAYERS.get(i).contains(pkg))
                return i;
        return -1;
    }

    /** package -> the packages its sources refer to (itself left out). */
    static Map<String, Set<String>> references(Path sources) throws IOException
    {
        Map<String, Set<String>> out = new TreeMap<>();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(sources))
        {
            files = walk.filter(p -> p.toString().endsWith(".java")).collect(java.util.stream.Collectors.toList());
        }
        for (Path file : files)
        {
            Path folder = sources.relativize(file.getParent());
            String pkg = folder.toString().isEmpty() ? "(root)" : folder.toString().replace('/', '.');
            String code = COMMENTS_AND_STRINGS.matcher(Files.readString(file)).replaceAll(" ");
            Set<String> used = out.computeIfAbsent(pkg, k -> new TreeSet<>());
            Matcher m = REFERENCE.matcher(code);
            while (m.find())
            {
                String target = m.group(1).isEmpty() ? "(root)" : m.group(1).substring(0, m.group(1).length() - 1);
                if (!target.equals(pkg))
                    used.add(target);
            }
        }
        return out;
    }

    static List<String> violations(Map<String, Set<String>> references)
    {
        List<String> out = new ArrayList<>();
        references.forEach((pkg, used) -> {
            if (layer(pkg) < 0)
                out.add(pkg + " is in no layer: place it in PackageLayersTest.LAYERS");
            for (String target : used)
                if (layer(pkg) >= 0 && layer(target) >= layer(pkg))
                    out.add(pkg + " (layer " + (layer(pkg) + 1) + ") uses " + target + " (layer " + (layer(target) + 1) + ")");
        });
        return out;
    }

    @Test
    void shouldUseOnlyPackagesOfLowerLayers() throws IOException
    {
        Map<String, Set<String>> found = references(SOURCES);
        assertTrue(found.keySet().containsAll(Set.of("(root)", "flows", "capture", "task", "spec")), found.keySet().toString());
        assertEquals(List.of(), violations(found));
    }

    @Test
    void shouldFindAPlantedUpwardReference(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException
    {
        Files.createDirectories(dir.resolve("task"));
        Files.createDirectories(dir.resolve("flows"));
        Files.writeString(dir.resolve("task/Task.java"),
                "package org.asynctriggers.task;\nimport org.asynctriggers.flows.Flow; // upward\n"
                + "class Task { String s = \"org.asynctriggers.work.Pool\"; }\n");
        Files.writeString(dir.resolve("flows/Flow.java"), "package org.asynctriggers.flows;\nimport org.asynctriggers.task.Task;\n");
        assertEquals(List.of("task (layer 3) uses flows (layer 6)"), violations(references(dir)));
    }
}
