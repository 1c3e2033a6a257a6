package org.asynctriggers.spec;

import java.nio.ByteBuffer;
import java.util.Map;

/** A value of a derived column: {@code source.<column>} or {@code row.<column>} (a fan-out row's column). */
public final class Expression
{
    public enum Scope { SOURCE, ROW }

    public final Scope scope;
    public final String column;

    private Expression(Scope scope, String column)
    {
        this.scope = scope;
        this.column = column;
    }

    public static Expression source(String column)
    {
        return new Expression(Scope.SOURCE, column);
    }

    public static Expression row(String column)
    {
        return new Expression(Scope.ROW, column);
    }

    /** Null when the text is not an expression. */
    static Expression parseOrNull(String text)
    {
        if (text == null)
            return null;
        int dot = text.indexOf('.');
        if (dot <= 0 || dot == text.length() - 1)
            return null;
        String column = text.substring(dot + 1);
        switch (text.substring(0, dot))
        {
            case "source": return source(column);
            case "row": return row(column);
            default: return null;
        }
    }

    public boolean isKnownIn(Map<String, ByteBuffer> sourceValues, Map<String, ByteBuffer> fanoutRow)
    {
        Map<String, ByteBuffer> from = scope == Scope.SOURCE ? sourceValues : fanoutRow;
        return from != null && from.containsKey(column);
    }

    public ByteBuffer valueIn(Map<String, ByteBuffer> sourceValues, Map<String, ByteBuffer> fanoutRow)
    {
        Map<String, ByteBuffer> from = scope == Scope.SOURCE ? sourceValues : fanoutRow;
        return from == null ? null : from.get(column);
    }

    @Override
    public String toString()
    {
        return (scope == Scope.SOURCE ? "source." : "row.") + column;
    }
}
